// Hugging Face LlamaForCausalLM tensor names ⇄ GGUF `llama` names (gguf-py TensorNameMap for
// MODEL_ARCH.LLAMA, one row per tensor kind). A table, not an inversion of gguf-py's many-to-one map.

const GLOBAL: ReadonlyArray<readonly [string, string]> = [
  ['model.embed_tokens.weight', 'token_embd.weight'],
  ['model.norm.weight', 'output_norm.weight'],
  ['lm_head.weight', 'output.weight'],
];

const PER_LAYER: ReadonlyArray<readonly [string, string]> = [
  ['input_layernorm.weight', 'attn_norm.weight'],
  ['self_attn.q_proj.weight', 'attn_q.weight'],
  ['self_attn.k_proj.weight', 'attn_k.weight'],
  ['self_attn.v_proj.weight', 'attn_v.weight'],
  ['self_attn.o_proj.weight', 'attn_output.weight'],
  ['self_attn.q_proj.bias', 'attn_q.bias'],
  ['self_attn.k_proj.bias', 'attn_k.bias'],
  ['self_attn.v_proj.bias', 'attn_v.bias'],
  ['self_attn.o_proj.bias', 'attn_output.bias'],
  // Qwen3: an RMS norm over each head's q and k before RoPE
  ['self_attn.q_norm.weight', 'attn_q_norm.weight'],
  ['self_attn.k_norm.weight', 'attn_k_norm.weight'],
  ['post_attention_layernorm.weight', 'ffn_norm.weight'],
  ['mlp.gate_proj.weight', 'ffn_gate.weight'],
  ['mlp.up_proj.weight', 'ffn_up.weight'],
  ['mlp.down_proj.weight', 'ffn_down.weight'],
];

const HF_GLOBAL = new Map(GLOBAL);
const GGUF_GLOBAL = new Map(GLOBAL.map(([a, b]) => [b, a]));
const HF_LAYER = new Map(PER_LAYER);
const GGUF_LAYER = new Map(PER_LAYER.map(([a, b]) => [b, a]));

const HF_LAYER_RE = /^model\.layers\.(\d+)\.(.+)$/;
const GGUF_LAYER_RE = /^blk\.(\d+)\.(.+)$/;

/** HF names the llama converter drops (recomputed at load time). */
export function isSkippedHfName(name: string): boolean {
  return name.endsWith('.rotary_emb.inv_freq') || name.endsWith('.attention.masked_bias') || name.endsWith('.attention.bias');
}

/** The GGUF name of a HF llama tensor, or null when it has none; `layerNames` adds an architecture's own per-layer names. */
export function hfToGgufName(name: string, layerNames?: ReadonlyMap<string, string>): string | null {
  const g = HF_GLOBAL.get(name);
  if (g) return g;
  const m = HF_LAYER_RE.exec(name);
  if (!m) return null;
  const rest = layerNames?.get(m[2]!) ?? HF_LAYER.get(m[2]!);
  return rest ? `blk.${Number(m[1])}.${rest}` : null;
}

/** The HF name of a GGUF llama tensor, or null (e.g. rope_freqs.weight, which HF recomputes). */
export function ggufToHfName(name: string): string | null {
  const g = GGUF_GLOBAL.get(name);
  if (g) return g;
  const m = GGUF_LAYER_RE.exec(name);
  if (!m) return null;
  const rest = GGUF_LAYER.get(m[2]!);
  return rest ? `model.layers.${Number(m[1])}.${rest}` : null;
}

/**
 * Which heads count the Q/K permutation uses for this GGUF name: q uses head_count, k uses
 * head_count_kv (weight and bias); null for every other tensor.
 */
export function permutedHeads(ggufName: string): 'q' | 'k' | null {
  const m = GGUF_LAYER_RE.exec(ggufName);
  if (!m) return null;
  if (m[2] === 'attn_q.weight' || m[2] === 'attn_q.bias') return 'q';
  if (m[2] === 'attn_k.weight' || m[2] === 'attn_k.bias') return 'k';
  return null;
}
