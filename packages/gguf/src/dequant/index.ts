import { TensorportError } from '@tensorport/core';
import { ggmlTypeByName, type GgmlType } from '../ggml-types.ts';
import { halfTable } from './half.ts';
import { iq1_m, iq1_s, iq2_s, iq2_xs, iq2_xxs, iq3_s, iq3_xxs, iq4_xs } from './iquants.ts';
import { q2_k, q3_k, q4_k, q5_k, q6_k } from './kquants.ts';
import { iq4_nl, mxfp4, nvfp4, q4_0, q4_1, q5_0, q5_1, q8_0 } from './legacy.ts';
import { tq1_0, tq2_0 } from './ternary.ts';

type Kernel = (b: Uint8Array, y: Float32Array, n: number) => void;

function f32(b: Uint8Array, y: Float32Array, n: number): void {
  new Uint8Array(y.buffer, y.byteOffset, n * 4).set(b.subarray(0, n * 4));
}

function f16(b: Uint8Array, y: Float32Array, n: number): void {
  const h = halfTable();
  for (let i = 0; i < n; i++) y[i] = h[b[2 * i]! | (b[2 * i + 1]! << 8)]!;
}

function bf16(b: Uint8Array, y: Float32Array, n: number): void {
  const u = new Uint32Array(y.buffer, y.byteOffset, n);
  // The bits shifted up, as gguf-py does (core's bf16BitsToF32 would quiet a signalling NaN).
  for (let i = 0; i < n; i++) u[i] = (b[2 * i]! << 16) | (b[2 * i + 1]! << 24);
}

/** The block types gguf-py 0.19.0 dequantizes, with F32, F16 and BF16. */
const KERNELS: Readonly<Record<string, Kernel>> = {
  F32: f32, F16: f16, BF16: bf16,
  Q4_0: q4_0, Q4_1: q4_1, Q5_0: q5_0, Q5_1: q5_1, Q8_0: q8_0,
  Q2_K: q2_k, Q3_K: q3_k, Q4_K: q4_k, Q5_K: q5_k, Q6_K: q6_k,
  IQ2_XXS: iq2_xxs, IQ2_XS: iq2_xs, IQ2_S: iq2_s, IQ3_XXS: iq3_xxs, IQ3_S: iq3_s, IQ1_S: iq1_s, IQ1_M: iq1_m,
  IQ4_NL: iq4_nl, IQ4_XS: iq4_xs, TQ1_0: tq1_0, TQ2_0: tq2_0, MXFP4: mxfp4, NVFP4: nvfp4,
};

export const DEQUANTIZABLE_TYPES: readonly string[] = Object.keys(KERNELS);

export function canDequantize(type: GgmlType | string): boolean {
  return (typeof type === 'string' ? type : type.name) in KERNELS;
}

function resolve(type: GgmlType | string): GgmlType {
  const t = typeof type === 'string' ? ggmlTypeByName(type) : type;
  if (!t) throw new TensorportError('GgufUnknownType', `unknown ggml type ${JSON.stringify(type)}`);
  return t;
}

/**
 * Dequantizes whole blocks of `type` to float32, bit for bit as `gguf.quants.dequantize` (gguf
 * 0.19.0) except NaN payloads (NaN stays NaN). `blocks` must hold a whole number of blocks;
 * `out`, if given, must hold their elements.
 */
export function dequantizeBlocks(type: GgmlType | string, blocks: Uint8Array, out?: Float32Array): Float32Array {
  const t = resolve(type);
  const kernel = KERNELS[t.name];
  if (!kernel) throw new TensorportError('GgufUnsupportedType', `dequantizing ${t.name} is not supported (gguf-py cannot either)`);
  if (blocks.byteLength % t.typeSize !== 0) {
    throw new TensorportError('GgufBlockMismatch', `${blocks.byteLength} bytes are not a whole number of ${t.name} blocks (${t.typeSize} bytes)`);
  }
  const n = blocks.byteLength / t.typeSize;
  const y = out ?? new Float32Array(n * t.blockSize);
  if (y.length < n * t.blockSize) throw new RangeError(`output holds ${y.length} values, ${n * t.blockSize} needed`);
  kernel(blocks, y, n);
  return y;
}
