/**
 * Rounding helpers on JS numbers for the dtypes MLX stores scales and biases in. The bit-level
 * conversions are core's (exact, ties to even); this adds the number-valued views the kernels use.
 */
import { bf16BitsToF32, f16BitsToF32, f32BitsToBf16, f32BitsToF16 } from '@tensorport/core';

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** Bits of an f32 value (the number is first rounded to f32). */
export function f32Bits(x: number): number {
  f32[0] = x;
  return u32[0]!;
}

function f32FromBits(bits: number): number {
  u32[0] = bits;
  return f32[0]!;
}

/** f16 bits → value; built once (256 KiB), so decoding is one lookup. */
let F16_TABLE: Float32Array | null = null;
export function f16Table(): Float32Array {
  if (F16_TABLE) return F16_TABLE;
  const t = new Float32Array(65536);
  const bits = new Uint32Array(t.buffer);
  for (let h = 0; h < 65536; h++) bits[h] = f16BitsToF32(h);
  F16_TABLE = t;
  return t;
}

/**
 * f16 bits nearest to `x`. Going through f32 first is exact for f32 values and for the result of
 * one +, -, *, / on f16 operands (24 ≥ 2·11 + 2 significant bits: the double rounding is innocuous).
 */
export function roundF16Bits(x: number): number {
  return f32BitsToF16(f32Bits(x));
}

/** bf16 bits nearest to the f32 value of `x` (same argument as above: 24 ≥ 2·8 + 2). */
export function roundBf16Bits(x: number): number {
  return f32BitsToBf16(f32Bits(x));
}

export function bf16ToNumber(b: number): number {
  return f32FromBits(bf16BitsToF32(b));
}

/** Round half to even, as C `rint` under the default rounding mode. */
export function roundHalfEven(x: number): number {
  const r = Math.round(x); // halves go toward +inf
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** Round half away from zero, as C `round` / Metal `round`. */
export function roundHalfAway(x: number): number {
  return x < 0 ? -Math.round(-x) : Math.round(x);
}

/**
 * Rounds f32 values in place to the nearest F16 / BF16 value (still stored as f32). Exact for the
 * f32-rounded result of one operation on F16/BF16 operands, by the double-rounding argument above.
 */
export function roundInPlace(values: Float32Array, start: number, end: number, dtype: 'F16' | 'BF16'): void {
  // Int32 lanes keep the arithmetic in small integers; `& -65536` wraps like the uint32 sum would.
  const bits = new Int32Array(values.buffer, values.byteOffset, values.length);
  if (dtype === 'BF16') {
    for (let i = start; i < end; i++) bits[i] = roundBf16Lane(bits[i]!);
  } else {
    for (let i = start; i < end; i++) bits[i] = roundF16Lane(bits[i]!);
  }
}

/** The f32 bits (as an int32) of the BF16 value nearest to the f32 with bits `x`, ties to even. */
export function roundBf16Lane(x: number): number {
  // A NaN (from NaN scales in a file) stays a quiet NaN instead of rounding to Inf.
  return (x & 0x7fffffff) > 0x7f800000 ? (x | 0x400000) & -65536 : (x + 0x7fff + ((x >>> 16) & 1)) & -65536;
}

/**
 * The f32 bits (as an int32) of the F16 value nearest to the f32 with bits `x`, ties to even. In
 * F16's normal range (2^-14 ≤ |x| < 65520) that is dropping 13 mantissa bits with the same
 * carry trick as BF16 (a carry into the exponent is the correct result); the rest (subnormals,
 * overflow, NaN) goes through the exact bit conversion.
 */
export function roundF16Lane(x: number): number {
  const a = x & 0x7fffffff;
  if (a >= 0x38800000 && a < 0x477ff000) return (x & -0x80000000) | ((a + 0xfff + ((a >>> 13) & 1)) & 0x7fffe000);
  return f16BitsTable()[f32BitsToF16(x)]!;
}

let F16_BITS: Int32Array | null = null;
function f16BitsTable(): Int32Array {
  if (F16_BITS) return F16_BITS;
  const t = f16Table();
  F16_BITS = new Int32Array(t.buffer, t.byteOffset, t.length);
  return F16_BITS;
}

/**
 * Veltkamp's splitting: with `split` = 2^(53 − p) + 1, `t - (t - x)` for `t = x · split` is x
 * rounded to p significant bits, to nearest with ties to even, in three f64 operations and no
 * memory round trip. For F16 (p = 11) and BF16 (p = 8) that is the dtype's rounding wherever the
 * result is normal and finite, which was checked against the exact bit conversion for every f32
 * from F16's smallest normal to its overflow midpoint 65520 and for every normal f32 below BF16's
 * (0x7f7f8000); a value with at most p significant bits (a subnormal of the dtype) comes back
 * unchanged. Subnormal results of other values, overflow and NaN are the caller's to exclude.
 */
export const F16_SPLIT = 2 ** 42 + 1;
export const BF16_SPLIT = 2 ** 45 + 1;

/** Largest finite values. */
export const F16_MAX = 65504;
export const BF16_MAX = 3.3895313892515355e38;

export function splitRound(x: number, split: number): number {
  const t = x * split;
  return t - (t - x);
}
