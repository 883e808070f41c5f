/**
 * The Hugging Face architectures whose checkpoints map onto llama.cpp's llama-family graphs with
 * the same tensor names (blk.N.attn_q, ffn_gate, …) and the same hyperparameter keys under their
 * GGUF architecture's prefix. What differs is a table row, as in convert_hf_to_gguf.py's model
 * classes: MistralModel is LlamaModel with another name; Qwen2Model has its own graph, whose RoPE
 * rotates NeoX halves, so its Q/K rows are written as transformers holds them; Qwen3 is Qwen2's
 * graph without biases and with an RMS norm over each head's q and k (attn_q_norm, attn_k_norm);
 * Phi-3 keeps q, k and v fused (attn_qkv) and gate and up fused (a double-width ffn_up), as its graph
 * reads them.
 */
export interface GgufArchitecture {
  /** general.architecture, and the prefix of its keys (`llama.block_count`, `qwen2.block_count`). */
  readonly name: 'llama' | 'qwen2' | 'qwen3' | 'phi3';
  /** Q/K rows reordered for llama.cpp's adjacent-pair RoPE (llama/names.ts permutedHeads). */
  readonly permuteQK: boolean;
  /** Per-layer HF → GGUF names this architecture adds to the llama table (llama/names.ts). */
  readonly layerNames?: ReadonlyMap<string, string>;
  // What llama.cpp's graph of this architecture creates (llama/loadable.ts checks files against it):
  /** attn_qkv instead of attn_q/k/v, and ffn_up twice as wide instead of ffn_gate beside it. */
  readonly fused: boolean;
  /** attn_q_norm and attn_k_norm, one per head dimension, required. */
  readonly qkNorms: boolean;
  /** The biases the graph reads when a file has them (optional in every graph checked). */
  readonly biases: readonly string[];
}

const LLAMA: GgufArchitecture = { name: 'llama', permuteQK: true, fused: false, qkNorms: false, biases: ['attn_q.bias', 'attn_k.bias', 'attn_v.bias', 'attn_output.bias'] };
const QWEN2: GgufArchitecture = { name: 'qwen2', permuteQK: false, fused: false, qkNorms: false, biases: ['attn_q.bias', 'attn_k.bias', 'attn_v.bias'] };
const QWEN3: GgufArchitecture = { name: 'qwen3', permuteQK: false, fused: false, qkNorms: true, biases: [] };
const PHI3: GgufArchitecture = {
  name: 'phi3',
  permuteQK: false,
  fused: true,
  qkNorms: false,
  biases: [],
  layerNames: new Map([
    ['self_attn.qkv_proj.weight', 'attn_qkv.weight'],
    ['mlp.gate_up_proj.weight', 'ffn_up.weight'],
  ]),
};

/** By config.json's `architectures[0]`, then by its `model_type`. */
const BY_CLASS: Readonly<Record<string, GgufArchitecture>> = { LlamaForCausalLM: LLAMA, MistralForCausalLM: LLAMA, Qwen2ForCausalLM: QWEN2, Qwen3ForCausalLM: QWEN3, Phi3ForCausalLM: PHI3 };
const BY_MODEL_TYPE: Readonly<Record<string, GgufArchitecture>> = { llama: LLAMA, mistral: LLAMA, qwen2: QWEN2, qwen3: QWEN3, phi3: PHI3 };

/** The HF classes tensorport writes as a runnable GGUF (for messages and docs). */
export const GGUF_MODEL_CLASSES: readonly string[] = Object.keys(BY_CLASS);

const BY_NAME: ReadonlyMap<string, GgufArchitecture> = new Map([LLAMA, QWEN2, QWEN3, PHI3].map((a) => [a.name, a]));

/** The architecture a GGUF's general.architecture names, when tensorport writes it; else null. */
export function ggufArchitectureNamed(name: string): GgufArchitecture | null {
  return BY_NAME.get(name) ?? null;
}

/** The GGUF architecture of a transformers config.json, or null when tensorport has no mapping for it. */
export function ggufArchitecture(config: Record<string, unknown> | undefined): GgufArchitecture | null {
  if (!config) return null;
  const classes = Array.isArray(config.architectures) ? config.architectures : [];
  for (const c of classes) if (typeof c === 'string' && Object.hasOwn(BY_CLASS, c)) return BY_CLASS[c]!;
  const type = config.model_type;
  return typeof type === 'string' && Object.hasOwn(BY_MODEL_TYPE, type) ? BY_MODEL_TYPE[type]! : null;
}
