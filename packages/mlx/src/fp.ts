/**
 * MLX's floating-point quantization modes (`mode="mxfp4" | "mxfp8" | "nvfp4"`): no biases, one U8
 * scale per group, elements packed in the same LSB-first stream as affine codes.
 * - mxfp4: group 32, 4-bit E2M1 elements, E8M0 scale (2^(byte-127)).
 * - mxfp8: group 32, 8-bit E4M3 elements (element i is byte i), E8M0 scale.
 * - nvfp4: group 16, 4-bit E2M1 elements, E4M3 scale; mlx-lm does not persist the optional
 *   global scale, so it is a parameter here (value × global / (448·6) when given).
 */
import { TensorportError } from '@tensorport/core';
import { unpackCodes } from './bitstream.ts';
import { roundTo, type FloatDType } from './bytes.ts';

export type FpMode = 'mxfp4' | 'mxfp8' | 'nvfp4';

export const FP_MODES: Readonly<Record<FpMode, { groupSize: number; bits: number }>> = {
  mxfp4: { groupSize: 32, bits: 4 },
  mxfp8: { groupSize: 32, bits: 8 },
  nvfp4: { groupSize: 16, bits: 4 },
};

/** E2M1: sign bit 3, magnitude index into the eight representable values. */
export const FP4_VALUES: readonly number[] = [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0, -0.5, -1, -1.5, -2, -3, -4, -6];

/** OCP E4M3 ("FN"): bias 7, subnormals, no infinities, S.1111.111 is NaN; max 448. */
export function e4m3ToNumber(b: number): number {
  const sign = b & 0x80 ? -1 : 1;
  const e = (b >> 3) & 0xf;
  const m = b & 7;
  if (e === 15 && m === 7) return NaN;
  if (e === 0) return sign * m * 2 ** -9;
  return sign * (8 + m) * 2 ** (e - 10);
}

/** E8M0: 2^(byte-127); 0xFF is NaN. */
export function e8m0ToNumber(b: number): number {
  return b === 0xff ? NaN : 2 ** (b - 127);
}

const E4M3 = Float64Array.from({ length: 256 }, (_, i) => e4m3ToNumber(i));
const E8M0 = Float64Array.from({ length: 256 }, (_, i) => e8m0ToNumber(i));

export interface FpDequantizeOptions {
  mode: FpMode;
  /** Output dtype; MLX's default for these modes is BF16. */
  dtype?: FloatDType;
  /** nvfp4 only: the global scale used at quantization time, if any. */
  globalScale?: number;
}

/**
 * Element × scale. Both factors have at most 4 significant bits, so the product is exact in f64
 * and one rounding to the output dtype gives what MLX computes in any order.
 */
export function dequantizeFp(words: Uint32Array, scales: Uint8Array, options: FpDequantizeOptions, out?: Float32Array): Float32Array {
  const mode = options.mode;
  const spec = FP_MODES[mode];
  if (!spec) throw new TensorportError('MlxUnsupportedQuantization', `unknown quantization mode ${String(mode)}`);
  if (options.globalScale !== undefined && mode !== 'nvfp4') {
    throw new TensorportError('MlxInvalidQuantization', `a global scale applies to nvfp4 only, not ${mode}`);
  }
  const dtype = options.dtype ?? 'BF16';
  const { groupSize, bits } = spec;
  const count = scales.length * groupSize;
  const codes = unpackCodes(words, bits, count);
  const dst = out ?? new Float32Array(count);
  const scaleTable = mode === 'nvfp4' ? E4M3 : E8M0;
  const global = options.globalScale === undefined ? 1 : Math.fround(Math.fround(options.globalScale) / 2688);
  for (let g = 0; g < scales.length; g++) {
    const s = scaleTable[scales[g]!]!;
    const start = g * groupSize;
    for (let j = start, end = start + groupSize; j < end; j++) {
      const e = bits === 4 ? FP4_VALUES[codes[j]!]! : E4M3[codes[j]!]!;
      let v = e * s;
      if (global !== 1) v = Math.fround(Math.fround(v) * global);
      dst[j] = roundTo(dtype, v);
    }
  }
  return dst;
}
