/**
 * MLX's floating-point quantization modes (`mode="mxfp4" | "mxfp8" | "nvfp4"`): no biases, one U8
 * scale per group, elements packed in the same LSB-first stream as affine codes.
 * - mxfp4: group 32, 4-bit E2M1 elements, E8M0 scale (2^(byte-127)).
 * - mxfp8: group 32, 8-bit E4M3 elements (element i is byte i), E8M0 scale.
 * - nvfp4: group 16, 4-bit E2M1 elements, E4M3 scale; mlx-lm does not persist the optional
 *   global scale, so it is a parameter here.
 *
 * Dequantization, as MLX computes it (mlx/ops.cpp `fp_dequantize`):
 * - `gpu` (Metal `fp_dequantize` in kernels/fp_quantized.h): the scale is decoded to f32, times
 *   global / 2688 (f32) when there is a global scale, times the element in f32, then cast once to T.
 * - `cpu` (the op-graph fallback in `fp_dequantize`): for mx modes the scale is built in T as
 *   `2^(T(byte) − 127)`, so in F16 small scales become 0 and large ones Inf before the multiply;
 *   nvfp4 with a global scale promotes to f32 (`from_fp8(s, T) * (global / T(2688))`), so the
 *   result is F32 whatever T was asked for.
 */
import { TensorportError } from '@tensorport/core';
import type { AffineVariant } from './affine.ts';
import { unpackCodes } from './bitstream.ts';
import { roundTo, type FloatDType } from './bytes.ts';
import { E4M3_VALUES, FP4_VALUES } from './fp-codes.ts';

export type FpMode = 'mxfp4' | 'mxfp8' | 'nvfp4';

export const FP_MODES: Readonly<Record<FpMode, { groupSize: number; bits: number }>> = {
  mxfp4: { groupSize: 32, bits: 4 },
  mxfp8: { groupSize: 32, bits: 8 },
  nvfp4: { groupSize: 16, bits: 4 },
};

/** F8E4M3_MAX · F4E2M1_MAX, the nvfp4 global-scale constant of both kernels. */
export const NVFP4_GLOBAL_DIVISOR = 448 * 6;

export interface FpDequantizeOptions {
  mode: FpMode;
  /** Output dtype asked for; MLX's default for these modes is BF16. */
  dtype?: FloatDType;
  /** nvfp4 only: the global scale used at quantization time, if any (an f32 scalar in MLX). */
  globalScale?: number;
  /** Which MLX path to reproduce; default `gpu`. */
  variant?: AffineVariant;
}

export function checkFpMode(mode: FpMode, globalScale?: number): { groupSize: number; bits: number } {
  const spec = FP_MODES[mode];
  if (!spec) throw new TensorportError('MlxUnsupportedQuantization', `unknown quantization mode ${String(mode)}`);
  if (globalScale !== undefined && mode !== 'nvfp4') {
    throw new TensorportError('MlxInvalidQuantization', `a global scale applies to nvfp4 only, not ${mode}`);
  }
  return spec;
}

/** The dtype MLX actually returns: F32 for nvfp4 with a global scale on the CPU path. */
export function fpDequantizedDtype(options: FpDequantizeOptions): FloatDType {
  const dtype = options.dtype ?? 'BF16';
  return options.variant === 'cpu' && options.mode === 'nvfp4' && options.globalScale !== undefined ? 'F32' : dtype;
}

/** Values (already rounded to `fpDequantizedDtype(options)`), one per element. */
export function dequantizeFp(words: Uint32Array, scales: Uint8Array, options: FpDequantizeOptions, out?: Float32Array): Float32Array {
  const mode = options.mode;
  const { groupSize, bits } = checkFpMode(mode, options.globalScale);
  const dtype = fpDequantizedDtype(options);
  const cpu = options.variant === 'cpu';
  const count = scales.length * groupSize;
  const codes = unpackCodes(words, bits, count);
  const dst = out ?? new Float32Array(count);
  const f = Math.fround;
  // global / 2688: an f32 division in both paths (2688 is exact in every T).
  const inv = options.globalScale === undefined ? null : f(f(options.globalScale) / NVFP4_GLOBAL_DIVISOR);
  // Every group with the same scale byte decodes alike: one table of outputs per byte seen.
  const elements = bits === 4 ? FP4_VALUES : E4M3_VALUES;
  const tables = new Array<Float32Array | undefined>(256);
  for (let g = 0; g < scales.length; g++) {
    const byte = scales[g]!;
    let table = tables[byte];
    if (!table) {
      let s: number;
      if (mode === 'nvfp4') {
        s = E4M3_VALUES[byte]!;
        if (inv !== null) s = f(s * inv);
      } else if (cpu) {
        s = roundTo(dtype, 2 ** (byte - 127)); // power(T(2), T(byte) - T(127)): 2^128 is Inf in every T
      } else {
        s = byte === 0xff ? Infinity : 2 ** (byte - 127);
      }
      table = new Float32Array(elements.length);
      // Element and scale carry few significant bits: the f64 product is exact, and the f32
      // rounding only matters for overflow and (with a global scale) the product itself.
      for (let k = 0; k < elements.length; k++) table[k] = roundTo(dtype, f(elements[k]! * s));
      tables[byte] = table;
    }
    const start = g * groupSize;
    for (let j = start, end = start + groupSize; j < end; j++) dst[j] = table[codes[j]!]!;
  }
  return dst;
}
