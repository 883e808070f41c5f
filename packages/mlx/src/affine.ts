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
import { packGroups, RINT } from './affine-codes.ts';
import { checkStream } from './bitstream.ts';
import { LITTLE_ENDIAN, roundTo, type FloatDType } from './bytes.ts';
import { BF16_MAX, BF16_SPLIT, F16_MAX, F16_SPLIT, roundBf16Lane, roundF16Lane, roundInPlace, splitRound } from './float.ts';
import { groupRange } from './group-range.ts';

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
  scaleBias(wMin, wMax, start, bits, variant, out);
}

/**
 * The second half of affineGroup, from the group's finite min and max (in `out` on return). The
 * sign of a zero min or max does not matter: a zero difference gives the eps scale, a zero edge
 * q0 = 0 and so bias 0.
 */
function scaleBias(wMin: number, wMax: number, start: number, bits: number, variant: AffineVariant, out: Float64Array): void {
  const f = Math.fround;
  const nBins = (1 << bits) - 1;
  // Which extreme is the edge is a coin toss for weights centred on 0, and as branches (the
  // sign of the scale, the pick of the edge) it mispredicted in half the groups: here it is a 0/1
  // that multiplies the sign and indexes the pick, through `out`.
  const useMin = +(Math.abs(wMin) > Math.abs(wMax));
  let scale = f(f(wMax - wMin) / nBins);
  if (!(scale > EPS)) scale = EPS; // std::max(x, eps) keeps eps unless x > eps
  scale *= 2 * useMin - 1; // negated unless the edge is the min
  out[0] = wMax;
  out[1] = wMin;
  const edge = out[useMin]!;
  const q0 = roundF32(f(edge / scale), variant === 'gpu');
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

/**
 * float.ts's roundHalfAway (`gpu`) or roundHalfEven of an f32 value `t`, by cheaper means: with
 * Math.round (and the tie test) they took about half of the scale pass (8-bit groups of 32: 0.95
 * of 2.2 ns per element). t ± 0.5 is exact or cannot reach the next integer (t is f32), and rint
 * is the f64 addition's own rounding where |t| < 2^51 (larger f32 values are integers already).
 * The sign of a zero result may differ, which q0 does not care about.
 */
export function roundF32(t: number, gpu: boolean): number {
  if (gpu) return t < 0 ? -Math.floor(0.5 - t) : Math.floor(t + 0.5);
  return Math.abs(t) < 2 ** 51 ? t + RINT - RINT : t;
}

/**
 * Quantizes rows of `cols` values (f32 values widened exactly from `dtype`). Codes go straight into
 * their words: a group (32, 64 or 128 codes of 2–8 bits) is a whole number of words, so each
 * group's bit stream starts on a word boundary and no byte-per-code array is needed.
 */
export function quantizeAffine(w: ArrayLike<number>, cols: number, options: AffineOptions): AffineQuantized {
  const { bits, groupSize } = options;
  checkAffineParams(bits, groupSize);
  const groups = checkCols(w.length, cols, groupSize);
  const variant = options.variant ?? 'gpu';
  const dtype = options.dtype ?? 'F32';
  // One element type for the loops below (the callers pass Float32Array; anything else is copied).
  const x = w instanceof Float32Array ? w : Float32Array.from(w);
  const words = new Uint32Array((x.length * bits) / 32);
  const scales = new Float32Array(groups);
  const biases = new Float32Array(groups);
  quantizeGroups(x, groupSize, bits, variant, dtype, words, scales, biases);
  return { words, scales, biases };
}

/**
 * quantizeAffine's work in passes over the whole block, each a function that ends with its loop:
 * V8 compiles a long-running call while it runs (on-stack replacement), and code after the loop
 * that had not run yet threw that compiled code away at the end of every call. One pass per job
 * (scales, then codes) also keeps each loop's callees few enough to be inlined, which the single
 * per-group loop calling all of them was not.
 */
function quantizeGroups(x: Float32Array, groupSize: number, bits: number, variant: AffineVariant, dtype: FloatDType, words: Uint32Array, scales: Float32Array, biases: Float32Array): void {
  groupScales(x, groupSize, bits, variant, scales, biases);
  // The codes use the f32 scales; only then are they rounded to the weight's dtype.
  packGroups(x, groupSize, bits, variant === 'gpu', scales, biases, words);
  if (dtype !== 'F32') roundInPlace(scales, 0, scales.length, dtype);
}

/**
 * The f32 scale (before any cast) and bias of every group, in two passes: each group's min and max
 * (into `scales` and `biases`), then each group's scale and bias from them. A scale and bias is a
 * chain of three divisions; with the next group's min and max between two chains, each waited for
 * the one before, and apart they overlap.
 */
function groupScales(x: Float32Array, groupSize: number, bits: number, variant: AffineVariant, scales: Float32Array, biases: Float32Array): void {
  groupRanges(x, groupSize, variant === 'gpu', scales, biases);
  groupScalesFromRanges(x, groupSize, bits, variant, scales, biases);
}

/** Min into `mins`, max into `maxs` (both exact in f32), or NaN as the min of a group that needs affineGroup. */
function groupRanges(x: Float32Array, groupSize: number, gpu: boolean, mins: Float32Array, maxs: Float32Array): void {
  const xBits = new Int32Array(x.buffer, x.byteOffset, x.length);
  const sb = new Float64Array(2);
  for (let g = 0, groups = mins.length; g < groups; g++) {
    if (groupRange(xBits, g * groupSize, groupSize, gpu, sb)) {
      mins[g] = sb[0]!;
      maxs[g] = sb[1]!;
    } else {
      mins[g] = NaN;
    }
  }
}

function groupScalesFromRanges(x: Float32Array, groupSize: number, bits: number, variant: AffineVariant, scales: Float32Array, biases: Float32Array): void {
  const sb = new Float64Array(2);
  for (let g = 0, groups = scales.length; g < groups; g++) {
    const wMin = scales[g]!;
    if (wMin === wMin) scaleBias(wMin, biases[g]!, g * groupSize, bits, variant, sb);
    else affineGroup(x, g * groupSize, groupSize, bits, variant, sb);
    scales[g] = sb[0]!;
    biases[g] = sb[1]!;
  }
}

/** Scales and biases only (what the `.scales` / `.biases` tensors hold), without the codes. */
export function affineScalesBiases(w: ArrayLike<number>, cols: number, options: AffineOptions): { scales: Float32Array; biases: Float32Array } {
  const { bits, groupSize } = options;
  checkAffineParams(bits, groupSize);
  const groups = checkCols(w.length, cols, groupSize);
  const dtype = options.dtype ?? 'F32';
  // As quantizeAffine: the callers pass Float32Array; anything else is copied.
  const x = w instanceof Float32Array ? w : Float32Array.from(w);
  const scales = new Float32Array(groups);
  const biases = new Float32Array(groups);
  groupScales(x, groupSize, bits, options.variant ?? 'gpu', scales, biases);
  if (dtype !== 'F32') roundInPlace(scales, 0, groups, dtype);
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
  checkStream(count, bits);
  if (words.length < (count * bits) / 32) throw new RangeError('not enough words');
  const dst = out ?? new Float32Array(count);
  dequantizeGroups(words, scales, biases, bits, groupSize, dtype, dst);
  // astype: a T value is exact in f32, so one rounding to the output dtype.
  if (outDtype !== 'F32' && outDtype !== dtype) roundInPlace(dst, 0, count, outDtype);
  return dst;
}

/** The group loop of dequantizeAffine, a function that ends with it (see quantizeGroups). */
function dequantizeGroups(words: Uint32Array, scales: ArrayLike<number>, biases: ArrayLike<number>, bits: number, groupSize: number, dtype: FloatDType, dst: Float32Array): void {
  const count = scales.length * groupSize;
  const lanes = new Int32Array(dst.buffer, dst.byteOffset, dst.length);
  const groups = scales.length;
  const mode = dtype === 'F32' ? 0 : dtype === 'BF16' ? 1 : 2;
  const mask = (1 << bits) - 1;
  // A group's outputs are a function of its code alone: with fewer codes than elements (4 bits in
  // groups of 64, ...) they are computed once per code into a table, then looked up (as int32
  // lanes, so every bit, NaN payloads included, is what the computation gave).
  const values = mask + 1;
  const table = values * 2 <= groupSize ? new Float32Array(values) : null;
  const tableLanes = table ? new Int32Array(table.buffer) : null;
  // Codes are read straight from the words (a group starts on a word boundary, see quantizeAffine);
  // 8-bit codes are the words' bytes in order on a little-endian host.
  const bytes = bits === 8 && LITTLE_ENDIAN ? new Uint8Array(words.buffer, words.byteOffset, count) : null;
  // Rounding to T by splitting (float.ts) instead of through memory, for every group in which no
  // value can overflow T (NaN or ±Inf scales and biases fail the test too). It is exact there:
  // q · s is exact in f32 (at most 8 + 11 bits), and the f32 rounding of the f64 sum is innocuous.
  const split = mode === 1 ? BF16_SPLIT : F16_SPLIT;
  const limit = mode === 0 ? 0 : mode === 1 ? BF16_MAX : F16_MAX;
  const f = Math.fround;
  let wi = 0;
  let acc = 0;
  let nb = 0;
  for (let g = 0; g < groups; g++) {
    const s = mode === 0 ? f(scales[g]!) : roundTo(dtype, scales[g]!);
    const b = mode === 0 ? f(biases[g]!) : roundTo(dtype, biases[g]!);
    const direct = mask * Math.abs(s) + Math.abs(b) < limit;
    const start = g * groupSize;
    const end = start + groupSize;
    if (table) {
      if (direct) for (let c = 0; c < values; c++) table[c] = splitRound(f(splitRound(c * s, split) + b), split);
      else for (let c = 0; c < values; c++) dequantizeOne(table, tableLanes!, c, c, s, b, mode);
    } else if (bytes) {
      // 8 bits: one pass per group, straight from the bytes.
      if (direct) {
        for (let j = start; j < end; j++) dst[j] = splitRound(f(splitRound(bytes[j]! * s, split) + b), split);
      } else if (mode === 0) {
        for (let j = start; j < end; j++) dst[j] = f(bytes[j]! * s) + b;
      } else {
        for (let j = start; j < end; j++) dequantizeOne(dst, lanes, j, bytes[j]!, s, b, mode);
      }
      continue;
    }
    for (let j = start; j < end; j++) {
      let c: number;
      if (nb < bits) {
        const next = words[wi++]!;
        // The `nb` bits left of the previous word, then this word's low bits above them.
        c = (acc | (next << nb)) & mask;
        acc = next >>> (bits - nb);
        nb += 32 - bits;
      } else {
        c = acc & mask;
        acc >>>= bits;
        nb -= bits;
      }
      if (tableLanes) lanes[j] = tableLanes[c]!;
      else dst[j] = c * s;
    }
    // Without a table: the group's products, then each rounding step over the whole group (the
    // steps of one element depend on each other through memory; those of a group do not).
    if (!tableLanes) {
      if (direct) {
        for (let j = start; j < end; j++) dst[j] = splitRound(f(splitRound(dst[j]!, split) + b), split);
        continue;
      }
      if (mode === 1) for (let j = start; j < end; j++) lanes[j] = roundBf16Lane(lanes[j]!);
      else if (mode === 2) for (let j = start; j < end; j++) lanes[j] = roundF16Lane(lanes[j]!);
      for (let j = start; j < end; j++) dst[j] = dst[j]! + b;
      if (mode === 1) for (let j = start; j < end; j++) lanes[j] = roundBf16Lane(lanes[j]!);
      else if (mode === 2) for (let j = start; j < end; j++) lanes[j] = roundF16Lane(lanes[j]!);
    }
  }
}

/**
 * `T(T(c * s) + b)` into element `j`: each f32 store is one rounding, each lane rounding after it
 * one rounding to T (mode 1 BF16, 2 F16; mode 0 is F32, where the stores are the roundings).
 */
function dequantizeOne(dst: Float32Array, lanes: Int32Array, j: number, c: number, s: number, b: number, mode: number): void {
  dst[j] = c * s;
  if (mode === 0) {
    dst[j] = dst[j]! + b;
    return;
  }
  lanes[j] = mode === 1 ? roundBf16Lane(lanes[j]!) : roundF16Lane(lanes[j]!);
  dst[j] = dst[j]! + b;
  lanes[j] = mode === 1 ? roundBf16Lane(lanes[j]!) : roundF16Lane(lanes[j]!);
}
