/**
 * MLX affine quantization, bit-exact to the kernels of mlx ≥ 0.23.2 (mlx/backend/cpu/quantized.cpp
 * `quantize`, Metal `affine_quantize`): all arithmetic in f32, rounded after every operation; codes
 * are computed with the unrounded f32 scale; scales are cast to the weight's dtype afterwards.
 *
 * The two kernels differ in two places, selected by `variant`:
 * - `gpu` (Metal and CUDA, what `mlx_lm.convert` runs on a Mac): `w_max` starts at 0, so an
 *   all-negative group uses max 0; rounding is `round`, half away from zero.
 * - `cpu`: `w_max` is the true maximum; rounding is `rint`, half to even.
 */
import { TensorportError } from '@tensorport/core';
import { packCodes, unpackCodes } from './bitstream.ts';
import { roundTo, type FloatDType } from './bytes.ts';
import { roundHalfAway, roundHalfEven, roundInPlace } from './float.ts';

export type AffineVariant = 'gpu' | 'cpu';

export const AFFINE_BITS: readonly number[] = [2, 3, 4, 5, 6, 8];
export const AFFINE_GROUP_SIZES: readonly number[] = [32, 64, 128];

export interface AffineOptions {
  bits: number;
  groupSize: number;
  /** Which MLX kernel to reproduce; default `gpu`. */
  variant?: AffineVariant;
  /** The weight's dtype: scales are rounded to it after the codes are computed. Default F32. */
  dtype?: FloatDType;
}

export interface AffineQuantized {
  /** Packed codes, `rows * cols * bits / 32` words. */
  words: Uint32Array;
  /** One per group, already rounded to `dtype`. */
  scales: Float32Array;
  /** One per group, exactly an input value or 0 (so exact in `dtype`). */
  biases: Float32Array;
}

const EPS = Math.fround(1e-7);

export function checkAffineParams(bits: number, groupSize: number, tensor?: string): void {
  const where = tensor === undefined ? {} : { tensor };
  if (!AFFINE_BITS.includes(bits)) {
    throw new TensorportError('MlxUnsupportedQuantization', `affine quantization supports bits 2, 3, 4, 5, 6 and 8, not ${bits}`, where);
  }
  if (!AFFINE_GROUP_SIZES.includes(groupSize)) {
    throw new TensorportError('MlxUnsupportedQuantization', `affine quantization supports group sizes 32, 64 and 128, not ${groupSize}`, where);
  }
}

function checkCols(length: number, cols: number, groupSize: number, tensor?: string): number {
  if (!Number.isInteger(cols) || cols <= 0 || cols % groupSize !== 0 || length % cols !== 0) {
    throw new TensorportError('MlxInvalidQuantization', `a last dimension of ${cols} does not divide into groups of ${groupSize}`, tensor === undefined ? {} : { tensor });
  }
  return length / groupSize;
}

/**
 * The f32 scale and bias of one group (before any cast), per the kernel text:
 *   s = max((max - min) / n_bins, eps), negated unless |min| > |max|; edge = min or max (the larger
 *   magnitude); q0 = round(edge / s); if q0 ≠ 0 then s = edge / q0 and bias = edge, else bias = 0.
 * Writes [scale, bias] into `out`.
 */
export function affineGroup(w: ArrayLike<number>, start: number, groupSize: number, bits: number, variant: AffineVariant, out: Float64Array): void {
  const f = Math.fround;
  const nBins = (1 << bits) - 1;
  let wMin = Infinity;
  let wMax = variant === 'gpu' ? 0 : -Infinity;
  let poison = 0;
  for (let j = start, end = start + groupSize; j < end; j++) {
    const v = w[j]!;
    poison += v * 0; // NaN for NaN or ±Infinity
    if (v < wMin) wMin = v;
    if (v > wMax) wMax = v;
  }
  if (poison !== 0 && poison !== poison) {
    throw new TensorportError('MlxNonFiniteWeight', `group at element ${start} holds NaN or Infinity`);
  }
  const mask = Math.abs(wMin) > Math.abs(wMax);
  let scale = f(f(wMax - wMin) / nBins);
  if (!(scale > EPS)) scale = EPS; // std::max(x, eps) keeps eps unless x > eps
  if (!mask) scale = -scale;
  const edge = mask ? wMin : wMax;
  const round = variant === 'gpu' ? roundHalfAway : roundHalfEven;
  const q0 = round(f(edge / scale));
  let bias = 0;
  if (q0 !== 0) {
    scale = f(edge / q0);
    bias = edge;
  }
  if (!Number.isFinite(q0) || scale === 0) {
    throw new TensorportError('MlxNonFiniteWeight', `group at element ${start} has no finite f32 scale (values near the f32 limit with a tiny range)`);
  }
  out[0] = scale;
  out[1] = bias;
}

/** Quantizes rows of `cols` values (f32 values widened exactly from `dtype`). */
export function quantizeAffine(w: ArrayLike<number>, cols: number, options: AffineOptions): AffineQuantized {
  const { bits, groupSize } = options;
  checkAffineParams(bits, groupSize);
  const groups = checkCols(w.length, cols, groupSize);
  const variant = options.variant ?? 'gpu';
  const dtype = options.dtype ?? 'F32';
  const nBins = (1 << bits) - 1;
  const codes = new Uint8Array(w.length);
  const scales = new Float32Array(groups);
  const biases = new Float32Array(groups);
  const sb = new Float64Array(2);
  for (let g = 0; g < groups; g++) {
    const start = g * groupSize;
    affineGroup(w, start, groupSize, bits, variant, sb);
    const scale = sb[0]!;
    const bias = sb[1]!;
    // A negative quotient clamps to code 0 whichever way it rounds, so only x ≥ 0 matters, where
    // Math.round (halves up) is round-half-away-from-zero; rint additionally sends odd ties down.
    if (variant === 'gpu') {
      for (let j = start, end = start + groupSize; j < end; j++) {
        const q = Math.round(Math.fround(Math.fround(w[j]! - bias) / scale));
        codes[j] = q > 0 ? (q > nBins ? nBins : q) : 0;
      }
    } else {
      for (let j = start, end = start + groupSize; j < end; j++) {
        const x = Math.fround(Math.fround(w[j]! - bias) / scale);
        let q = Math.round(x);
        if (q - x === 0.5 && (q & 1) === 1) q -= 1;
        codes[j] = q > 0 ? (q > nBins ? nBins : q) : 0;
      }
    }
    scales[g] = roundTo(dtype, scale);
    biases[g] = bias;
  }
  return { words: packCodes(codes, bits), scales, biases };
}

/** Scales and biases only (what the `.scales` / `.biases` tensors hold), without the codes. */
export function affineScalesBiases(w: ArrayLike<number>, cols: number, options: AffineOptions): { scales: Float32Array; biases: Float32Array } {
  const { bits, groupSize } = options;
  checkAffineParams(bits, groupSize);
  const groups = checkCols(w.length, cols, groupSize);
  const variant = options.variant ?? 'gpu';
  const dtype = options.dtype ?? 'F32';
  const scales = new Float32Array(groups);
  const biases = new Float32Array(groups);
  const sb = new Float64Array(2);
  for (let g = 0; g < groups; g++) {
    affineGroup(w, g * groupSize, groupSize, bits, variant, sb);
    scales[g] = roundTo(dtype, sb[0]!);
    biases[g] = sb[1]!;
  }
  return { scales, biases };
}

export interface DequantizeOptions {
  bits: number;
  groupSize: number;
  /** The scales' (and biases') dtype T, which MLX computes in; default F32. */
  dtype?: FloatDType;
  /** Cast to this afterwards (`astype`), as `mx.dequantize(..., dtype=)` does; default `dtype`. */
  outDtype?: FloatDType;
}

/**
 * `w = scale * q + bias` as MLX computes it (mlx/ops.cpp `affine_dequantize` and `dequantize`):
 * in the scales' dtype T, `T(T(q * scale) + bias)` (two roundings, the CPU op graph
 * multiply-then-add; the Metal kernel's `scale * d + bias` in T may be fused to an FMA and differ
 * by one ulp), and only then cast to the requested dtype.
 */
export function dequantizeAffine(
  words: Uint32Array,
  scales: ArrayLike<number>,
  biases: ArrayLike<number>,
  options: DequantizeOptions,
  out?: Float32Array,
): Float32Array {
  const { bits, groupSize } = options;
  const dtype = options.dtype ?? 'F32';
  const outDtype = options.outDtype ?? dtype;
  const count = scales.length * groupSize;
  if (biases.length !== scales.length) {
    throw new TensorportError('MlxInvalidQuantization', `${scales.length} scales but ${biases.length} biases`);
  }
  const codes = unpackCodes(words, bits, count);
  const dst = out ?? new Float32Array(count);
  const groups = scales.length;
  if (dtype === 'F32') {
    for (let g = 0; g < groups; g++) {
      const s = Math.fround(scales[g]!);
      const b = Math.fround(biases[g]!);
      // The store into the Float32Array is the second rounding.
      for (let j = g * groupSize, end = j + groupSize; j < end; j++) dst[j] = Math.fround(codes[j]! * s) + b;
    }
  } else {
    // Each f32 store followed by roundInPlace is one rounding to T (see float.ts).
    for (let g = 0; g < groups; g++) {
      const s = roundTo(dtype, scales[g]!);
      for (let j = g * groupSize, end = j + groupSize; j < end; j++) dst[j] = codes[j]! * s;
    }
    roundInPlace(dst, 0, count, dtype);
    for (let g = 0; g < groups; g++) {
      const b = roundTo(dtype, biases[g]!);
      for (let j = g * groupSize, end = j + groupSize; j < end; j++) dst[j] = dst[j]! + b;
    }
    roundInPlace(dst, 0, count, dtype);
  }
  // astype: a T value is exact in f32, so one rounding to the output dtype.
  if (outDtype !== 'F32' && outDtype !== dtype) roundInPlace(dst, 0, count, outDtype);
  return dst;
}
