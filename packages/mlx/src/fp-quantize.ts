/**
 * Quantization to mxfp4, mxfp8 and nvfp4, bit-exact to MLX (mlx/ops.cpp `fp_quantize`). Two paths:
 *
 * - `gpu` (Metal `fp_quantize`, kernels/fp_quantized.h; what runs on a Mac): everything in f32.
 *   amax = max |w| per group; mx: byte = E8M0(amax / 6 or 448) with round(log2) half away from
 *   zero, clamped to [−127, 127] (an all-zero group gives byte 0); elements `w · (1 / scale)`.
 *   nvfp4: byte = E4M3(amax / 6 [· 2688 / g]); elements `w · f32(enc / e4m3(byte))`, 0 when the
 *   scale is 0. Elements are encoded by `fp4_e2m1` (ties to even, sign kept) or `fp8_e4m3`.
 * - `cpu` (the fallback op graph in `fp_quantize`; MLX on a CPU stream): every op in the weight's
 *   dtype T. mx: `s = T(amax / maxval)`; `n = rint(T(log2 s))` (0 when s is 0, so an all-zero group
 *   gets byte 127); elements `T(w / T(2^n))`; byte `uint8(n + 127)`, which wraps below n = −127
 *   (denormal groups: F32, BF16). nvfp4: `s = T(amax / 6)` promoted to f32 and times the f32
 *   `enc` (1 or 2688 / g), E4M3-encoded; elements `f32(T(w / T(e4m3(byte))) · enc)`. fp4 codes are
 *   `argmin_k |x − lut_k|` computed in x's dtype: ties go to the lower index (toward the smaller
 *   magnitude, and +0 for any negative that rounds to zero), NaN / ±Inf to code 0.
 */
import { TensorportError } from '@tensorport/core';
import type { AffineVariant } from './affine.ts';
import { packCodes } from './bitstream.ts';
import { roundTo, type FloatDType } from './bytes.ts';
import { checkFpMode, NVFP4_GLOBAL_DIVISOR, type FpMode } from './fp.ts';
import { E4M3_VALUES, FP4_VALUES, numberToE2m1, numberToE4m3, numberToE8m0 } from './fp-codes.ts';
import { roundHalfEven } from './float.ts';

export interface FpQuantizeOptions {
  mode: FpMode;
  /** Which MLX path to reproduce; default `gpu`. */
  variant?: AffineVariant;
  /** The weight's dtype (the CPU path computes in it); default F32. */
  dtype?: FloatDType;
  /** nvfp4 only: an f32 global scale (mlx-lm never passes one). */
  globalScale?: number;
}

export interface FpQuantized {
  words: Uint32Array;
  /** One byte per group: E8M0 (mx modes) or E4M3 (nvfp4). */
  scales: Uint8Array;
}

function checkCols(length: number, cols: number, groupSize: number): number {
  if (!Number.isInteger(cols) || cols <= 0 || cols % groupSize !== 0 || length % cols !== 0) {
    throw new TensorportError('MlxInvalidQuantization', `a last dimension of ${cols} does not divide into groups of ${groupSize}`);
  }
  return length / groupSize;
}

/** The CPU path's fp4 code: first index of the least |x − lut_k|, each distance rounded to `dt`. */
function argminFp4(x: number, dt: FloatDType): number {
  let best = 0;
  let bestD = roundTo(dt, Math.abs(x - FP4_VALUES[0]!));
  for (let k = 1; k < 16; k++) {
    const d = roundTo(dt, Math.abs(x - FP4_VALUES[k]!));
    if (d < bestD) {
      bestD = d;
      best = k;
    }
  }
  return best;
}

/** Quantizes rows of `cols` values (exact f32 views of `dtype` values). */
export function quantizeFp(w: ArrayLike<number>, cols: number, options: FpQuantizeOptions): FpQuantized {
  const { mode } = options;
  const { groupSize, bits } = checkFpMode(mode, options.globalScale);
  const groups = checkCols(w.length, cols, groupSize);
  const cpu = options.variant === 'cpu';
  const dt = options.dtype ?? 'F32';
  const f = Math.fround;
  const maxval = bits === 4 ? 6 : 448;
  const enc = options.globalScale === undefined ? 1 : f(NVFP4_GLOBAL_DIVISOR / f(options.globalScale));
  if (!Number.isFinite(enc) || enc <= 0) {
    throw new TensorportError('MlxInvalidQuantization', `global scale ${options.globalScale} gives no finite positive f32 encoding factor`);
  }
  const codes = new Uint8Array(w.length);
  const scales = new Uint8Array(groups);
  for (let g = 0; g < groups; g++) {
    const start = g * groupSize;
    const end = start + groupSize;
    let amax = 0;
    let poison = 0;
    for (let j = start; j < end; j++) {
      const v = w[j]!;
      poison += v * 0;
      const a = Math.abs(v);
      if (a > amax) amax = a;
    }
    if (poison !== 0 && poison !== poison) {
      throw new TensorportError('MlxNonFiniteWeight', `group at element ${start} holds NaN or Infinity`);
    }
    if (mode === 'nvfp4') {
      let byte: number;
      let mul: number; // elements: x = w · mul (gpu) or T(w / div) · enc (cpu)
      if (cpu) {
        byte = numberToE4m3(f(roundTo(dt, amax / maxval) * enc));
        const div = roundTo(dt, E4M3_VALUES[byte]!);
        for (let j = start; j < end; j++) codes[j] = argminFp4(f(roundTo(dt, w[j]! / div) * enc), 'F32');
        scales[g] = byte;
        continue;
      }
      let sd = f(amax / maxval);
      if (enc !== 1) sd = f(sd * enc);
      byte = numberToE4m3(sd);
      const s = E4M3_VALUES[byte]!;
      mul = s === 0 ? 0 : f(enc / s);
      for (let j = start; j < end; j++) codes[j] = numberToE2m1(f(w[j]! * mul));
      scales[g] = byte;
      continue;
    }
    if (cpu) {
      const s = roundTo(dt, amax / maxval);
      const n = s === 0 ? 0 : roundHalfEven(roundTo(dt, f(Math.log2(s))));
      const p = roundTo(dt, 2 ** n);
      for (let j = start; j < end; j++) {
        const x = roundTo(dt, w[j]! / p);
        codes[j] = bits === 4 ? argminFp4(x, dt) : numberToE4m3(x);
      }
      scales[g] = (n + 127) & 0xff; // the float → uint8 cast of a negative value wraps (x86)
      continue;
    }
    const byte = numberToE8m0(f(amax / maxval));
    const mul = f(1 / 2 ** (byte - 127)); // byte 0 decodes to 2^−127 as well
    for (let j = start; j < end; j++) {
      const x = f(w[j]! * mul);
      codes[j] = bits === 4 ? numberToE2m1(x) : numberToE4m3(x);
    }
    scales[g] = byte;
  }
  return { words: packCodes(codes, bits), scales };
}
