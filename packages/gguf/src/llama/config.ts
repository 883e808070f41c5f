import { TensorportError } from '@tensorport/core';
import { float32String, gguf, type GgufValue } from '../values.ts';
import type { GgufArchitecture } from './arch.ts';
import { ropeParameters, ropeScalingMetadata } from './rope.ts';

/** The fields of a HF LlamaConfig (config.json) that the GGUF metadata carries. */
export interface LlamaConfig {
  hidden_size: number;
  intermediate_size: number;
  num_hidden_layers: number;
  num_attention_heads: number;
  num_key_value_heads?: number;
  max_position_embeddings: number;
  rms_norm_eps: number;
  rope_theta?: number;
  /** transformers ≥ 5 keeps rope_theta (and the scaling) here. */
  rope_parameters?: ({ rope_theta?: number; rope_type?: string; type?: string; factor?: number } & Record<string, unknown>) | null;
  vocab_size: number;
  head_dim?: number;
  tie_word_embeddings?: boolean;
  bos_token_id?: number | null;
  eos_token_id?: number | number[] | null;
  pad_token_id?: number | null;
  rope_scaling?: ({ rope_type?: string; type?: string; factor?: number } & Record<string, unknown>) | null;
  [key: string]: unknown;
}

const LLAMA = 'llama';

function ropeTheta(config: LlamaConfig): number {
  if (typeof config.rope_theta === 'number') return config.rope_theta;
  const p = config.rope_parameters?.rope_theta;
  return typeof p === 'number' ? p : 10000;
}

function need(config: Record<string, unknown>, key: string): number {
  const v = config[key];
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new TensorportError('GgufInvalidModel', `config.json: ${key} must be a number, got ${JSON.stringify(v)}`);
  return v;
}

/** Heads and head size of a llama config (head_dim defaults to hidden/heads). */
export function llamaHeads(config: LlamaConfig): { heads: number; kvHeads: number; headDim: number } {
  const heads = need(config, 'num_attention_heads');
  const kvHeads = typeof config.num_key_value_heads === 'number' ? config.num_key_value_heads : heads;
  const headDim = typeof config.head_dim === 'number' ? config.head_dim : need(config, 'hidden_size') / heads;
  return { heads, kvHeads, headDim };
}

/**
 * GGUF llama metadata from config.json, with the types llama.cpp requires (UINT32 counts, FLOAT32
 * rope base and epsilon; §4.5 of the reference notes). `general.architecture` comes first, as
 * GGUFWriter writes it. `fileType` is the llama_ftype number (general.file_type).
 */
export function llamaMetadata(config: LlamaConfig, options: { name?: string; fileType?: number; architecture?: GgufArchitecture['name'] } = {}): Array<[string, GgufValue]> {
  const { heads, kvHeads, headDim } = llamaHeads(config);
  // The same keys under the architecture's own prefix (llama.cpp reads `<arch>.block_count`…).
  const A = options.architecture ?? LLAMA;
  const kv: Array<[string, GgufValue]> = [
    ['general.architecture', gguf.str(A)],
    ['general.type', gguf.str('model')],
  ];
  if (options.name) kv.push(['general.name', gguf.str(options.name)]);
  kv.push(
    [`${A}.block_count`, gguf.u32(need(config, 'num_hidden_layers'))],
    [`${A}.context_length`, gguf.u32(need(config, 'max_position_embeddings'))],
    [`${A}.embedding_length`, gguf.u32(need(config, 'hidden_size'))],
    [`${A}.feed_forward_length`, gguf.u32(need(config, 'intermediate_size'))],
    [`${A}.attention.head_count`, gguf.u32(heads)],
    [`${A}.attention.head_count_kv`, gguf.u32(kvHeads)],
    [`${A}.rope.freq_base`, gguf.f32(ropeTheta(config))],
    [`${A}.attention.layer_norm_rms_epsilon`, gguf.f32(need(config, 'rms_norm_eps'))],
  );
  if (typeof config.head_dim === 'number') {
    kv.push([`${A}.attention.key_length`, gguf.u32(headDim)], [`${A}.attention.value_length`, gguf.u32(headDim)]);
  }
  // A partial rotary factor (Phi-3) rotates fewer dimensions, as the converter counts them.
  const partial = ropeParameters(config)?.partial_rotary_factor ?? config.partial_rotary_factor;
  const rotated = typeof partial === 'number' && partial > 0 && partial < 1 ? Math.floor(Math.floor(partial * need(config, 'hidden_size')) / heads) : headDim;
  kv.push([`${A}.vocab_size`, gguf.u32(need(config, 'vocab_size'))], [`${A}.rope.dimension_count`, gguf.u32(rotated)]);
  if (A === 'phi3') {
    // The converter's two phi3 keys: the pre-extension context, and the sliding window (0: none).
    const original = ropeParameters(config)?.original_max_position_embeddings ?? config.original_max_position_embeddings;
    if (typeof original === 'number') kv.push([`${A}.rope.scaling.original_context_length`, gguf.u32(original)]);
    kv.push([`${A}.attention.sliding_window`, gguf.u32(typeof config.sliding_window === 'number' ? config.sliding_window : 0)]);
  }
  kv.push(...ropeScalingMetadata(A, config));
  if (options.fileType !== undefined) kv.push(['general.file_type', gguf.u32(options.fileType)]);
  kv.push(['general.quantization_version', gguf.u32(2)]);
  return kv;
}

function num(kv: ReadonlyMap<string, GgufValue>, key: string, required: boolean): number | undefined {
  const v = kv.get(key);
  if (v === undefined) {
    if (required) throw new TensorportError('GgufInvalidModel', `GGUF metadata has no ${key}`);
    return undefined;
  }
  // A FLOAT32 reads back as the decimal it was written from (1e-5, not 9.99999974e-6).
  if (typeof v.value === 'number') return v.type === 'FLOAT32' ? Number(float32String(v.value)) : v.value;
  if (typeof v.value === 'bigint') return Number(v.value);
  throw new TensorportError('GgufInvalidModel', `GGUF ${key} is ${v.type}, not a number`);
}

/**
 * A transformers config.json (LlamaForCausalLM) from GGUF llama metadata. `vocabSize` is the
 * embedding's row count; `tied` says whether output.weight is absent (llama.cpp then reuses
 * token_embd). `dtype` is the dtype the weights are written in.
 */
export function llamaConfigFromGguf(kv: ReadonlyMap<string, GgufValue>, opts: { vocabSize: number; tied: boolean; dtype: 'float32' | 'float16' | 'bfloat16' }): Record<string, unknown> {
  const A = LLAMA;
  const arch = kv.get('general.architecture');
  if (arch?.type !== 'STRING' || arch.value !== A) {
    throw new TensorportError('GgufInvalidModel', `general.architecture is ${arch ? JSON.stringify(arch.value) : 'missing'}; only "llama" maps to a transformers config`);
  }
  const hidden = num(kv, `${A}.embedding_length`, true)!;
  const heads = num(kv, `${A}.attention.head_count`, true)!;
  const keyLength = num(kv, `${A}.attention.key_length`, false);
  const config: Record<string, unknown> = {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    hidden_size: hidden,
    intermediate_size: num(kv, `${A}.feed_forward_length`, true),
    num_hidden_layers: num(kv, `${A}.block_count`, true),
    num_attention_heads: heads,
    num_key_value_heads: num(kv, `${A}.attention.head_count_kv`, false) ?? heads,
    max_position_embeddings: num(kv, `${A}.context_length`, true),
    rms_norm_eps: num(kv, `${A}.attention.layer_norm_rms_epsilon`, true),
    rope_theta: num(kv, `${A}.rope.freq_base`, false) ?? 10000,
    vocab_size: opts.vocabSize,
    tie_word_embeddings: opts.tied,
    hidden_act: 'silu',
    attention_bias: false,
    mlp_bias: false,
    torch_dtype: opts.dtype,
  };
  if (keyLength !== undefined && keyLength !== hidden / heads) config.head_dim = keyLength;
  const bos = num(kv, 'tokenizer.ggml.bos_token_id', false);
  const eos = num(kv, 'tokenizer.ggml.eos_token_id', false);
  if (bos !== undefined) config.bos_token_id = bos;
  if (eos !== undefined) config.eos_token_id = eos;
  const scaling = kv.get(`${A}.rope.scaling.type`);
  const factor = num(kv, `${A}.rope.scaling.factor`, false);
  if (scaling?.type === 'STRING' && factor !== undefined && (scaling.value === 'linear' || scaling.value === 'yarn')) {
    config.rope_scaling = { rope_type: scaling.value, factor };
  }
  return config;
}
