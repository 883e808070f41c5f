/**
 * RoPE scaling as llama.cpp reads it, from config.json's `rope_parameters` (transformers 5) or
 * `rope_scaling` (older), as convert_hf_to_gguf.py writes it:
 * - linear: `<a>.rope.scaling.type` and `.factor`;
 * - yarn: the same, `.original_context_length`, and the optional yarn factors;
 * - llama3 (Llama 3.1+): no key, a `rope_freqs.weight` tensor of one factor per frequency that
 *   llama.cpp divides the frequencies by (llama3RopeFactors).
 */
import type { TensorDescriptor } from '@tensorport/core';
import { gguf, type GgufValue } from '../values.ts';

type RopeParams = Record<string, unknown>;

/** The full-attention rope parameters (Gemma-style configs nest them per attention kind). */
export function ropeParameters(config: Record<string, unknown>): RopeParams | null {
  const p = (config.rope_parameters ?? config.rope_scaling) as RopeParams | null | undefined;
  if (!p || typeof p !== 'object') return null;
  const full = p.full_attention;
  return full && typeof full === 'object' ? (full as RopeParams) : p;
}

function ropeType(p: RopeParams | null): string | undefined {
  const t = p?.rope_type ?? p?.type;
  return typeof t === 'string' ? t.toLowerCase() : undefined;
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** The rope scaling keys of `<a>` for a config (none for default and llama3 rope). */
export function ropeScalingMetadata(a: string, config: Record<string, unknown>): Array<[string, GgufValue]> {
  const p = ropeParameters(config);
  const type = ropeType(p);
  const factor = num(p?.factor);
  if ((type !== 'linear' && type !== 'yarn') || factor === undefined) return [];
  const kv: Array<[string, GgufValue]> = [[`${a}.rope.scaling.type`, gguf.str(type)], [`${a}.rope.scaling.factor`, gguf.f32(factor)]];
  if (type === 'yarn') {
    const original = num(p!.original_max_position_embeddings);
    if (original !== undefined) kv.push([`${a}.rope.scaling.original_context_length`, gguf.u32(original)]);
    const optional: Array<[string, unknown]> = [
      ['yarn_ext_factor', p!.extrapolation_factor],
      ['yarn_attn_factor', p!.attention_factor ?? p!.attn_factor],
      ['yarn_beta_fast', p!.beta_fast],
      ['yarn_beta_slow', p!.beta_slow],
    ];
    for (const [key, v] of optional) if (num(v) !== undefined) kv.push([`${a}.rope.scaling.${key}`, gguf.f32(num(v)!)]);
  }
  return kv;
}

/**
 * Llama 3.1's frequency factors: for each of the head's dim/2 frequencies, 1 above the high-frequency
 * wavelength bound, `factor` below the low one, and a smooth blend between (`low_freq_factor`,
 * `high_freq_factor`, `original_max_position_embeddings`; defaults 1, 4, 8192 and factor 8, as the
 * converter's). In float32 step by step, as the converter computes them in torch, so the tensor's
 * bytes are its bytes. null when the config's rope type is not llama3.
 */
export function llama3RopeFactors(config: Record<string, unknown>, headDim: number): Float32Array | null {
  const p = ropeParameters(config);
  if (ropeType(p) !== 'llama3') return null;
  const f = Math.fround;
  const base = num(p!.rope_theta) ?? num(config.rope_theta) ?? 10000;
  const factor = num(p!.factor) ?? 8;
  const low = num(p!.low_freq_factor) ?? 1;
  const high = num(p!.high_freq_factor) ?? 4;
  const old = num(p!.original_max_position_embeddings) ?? 8192;
  const lowWavelen = old / low;
  const highWavelen = old / high;
  const out = new Float32Array(headDim / 2);
  for (let i = 0; i < out.length; i++) {
    const freq = f(1 / f(f(base) ** f(f(2 * i) / headDim)));
    const wavelen = f(f(2 * Math.PI) / freq);
    if (wavelen < highWavelen) out[i] = 1;
    else if (wavelen > lowWavelen) out[i] = factor;
    else {
      const smooth = f(f(f(old / wavelen) - low) / (high - low));
      out[i] = f(1 / f(f(f(1 - smooth) / factor) + smooth));
    }
  }
  return out;
}

/** An F32 vector held in memory as a tensor descriptor (the generated rope_freqs.weight). */
export function f32Tensor(name: string, values: Float32Array): TensorDescriptor {
  const bytes = new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  return {
    name,
    dtype: 'F32',
    shape: [values.length],
    byteLength: bytes.byteLength,
    async *chunks() {
      yield bytes;
    },
  };
}
