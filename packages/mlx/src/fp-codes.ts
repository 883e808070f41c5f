/**
 * The small float formats of MLX's fp quantization modes, encoded and decoded the way MLX's own
 * conversions do (which is not always the OCP definition):
 * - E4M3 (`fp8_e4m3` in metal/kernels/fp8.h, `ToFP8` / `FromFP8` in backend/cpu/unary_ops.h):
 *   round to nearest even with subnormals; |x| ≥ 464, ±Inf and NaN all saturate to ±448; the
 *   decode is a bit shift into an f16, so S.1111.111 decodes to ±480, never NaN.
 * - E2M1 (`fp4_e2m1` in metal/kernels/fp4.h): thresholds that round to nearest even, saturating at
 *   6, sign kept (so −0 and small negatives give code 8); NaN gives 7.
 * - E8M0 (`fp8_e8m0`): 2^(byte − 127) with byte 0 decoding to 2^−127 and 0xFF to +Inf.
 */
import { f32Bits } from './float.ts';

/** E2M1 magnitudes by code (bit 3 is the sign). */
export const FP4_VALUES: readonly number[] = [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0, -0.5, -1, -1.5, -2, -3, -4, -6];

/** E4M3 as MLX decodes it: S.EEEE.MMM, bias 7, subnormals, 0x7F/0xFF → ±480. */
export function e4m3ToNumber(b: number): number {
  const sign = b & 0x80 ? -1 : 1;
  const e = (b >> 3) & 0xf;
  const m = b & 7;
  return e === 0 ? sign * m * 2 ** -9 : sign * (8 + m) * 2 ** (e - 10);
}

/** E8M0 as MLX's kernels decode it: 2^(byte − 127) (byte 0 is special-cased to the f32 bits of 2^−127), 0xFF is +Inf. */
export function e8m0ToNumber(b: number): number {
  return b === 0xff ? Infinity : 2 ** (b - 127);
}

export const E4M3_VALUES = Float64Array.from({ length: 256 }, (_, i) => e4m3ToNumber(i));

function roundHalfEvenInt(x: number): number {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** E4M3 bits nearest to the f32 value of `x` (ties to even), saturating as MLX does. */
export function numberToE4m3(x: number): number {
  const bits = f32Bits(x);
  const sign = (bits >>> 24) & 0x80;
  const mag = bits & 0x7fffffff;
  if (mag >= 0x43e80000) return sign | 0x7e; // ≥ 464, ±Inf and NaN
  if (mag < 0x3c800000) return sign | roundHalfEvenInt(Math.abs(Math.fround(x)) * 2 ** 9); // below 2^-6: subnormal steps of 2^-9 (8 is the first normal)
  // Normal: keep 3 of the 23 mantissa bits, ties to even; a carry moves into the exponent.
  let e = (mag >>> 23) - 120;
  let q = (mag >>> 20) & 7;
  const rest = mag & 0xfffff;
  if (rest > 0x80000 || (rest === 0x80000 && (q & 1) === 1)) q++;
  if (q === 8) {
    q = 0;
    e++;
  }
  return sign | (e << 3) | q;
}

/** E2M1 code of `x` by Metal's thresholds (see the file comment). */
export function numberToE2m1(x: number): number {
  if (x !== x) return 0x7;
  const sign = x < 0 || Object.is(x, -0) ? 0x8 : 0;
  const a = Math.abs(x);
  const m = a > 5 ? 7 : a >= 3.5 ? 6 : a > 2.5 ? 5 : a >= 1.75 ? 4 : a > 1.25 ? 3 : a >= 0.75 ? 2 : a > 0.25 ? 1 : 0;
  return m | sign;
}

/**
 * E8M0 byte of a (non-negative) f32 scale on the GPU: round(log2(x)) with round half away from
 * zero, clamped to ±127; 0 (log2 = −Inf, saturated by the float → int conversion) gives byte 0.
 */
export function numberToE8m0(x: number): number {
  if (!Number.isFinite(x)) return 0xff;
  if (x < 0) return 0;
  if (x === 0) return 0;
  const le = Math.fround(Math.log2(x));
  let n = le < 0 ? -Math.round(-le) : Math.round(le);
  n = n < -127 ? -127 : n > 127 ? 127 : n;
  return n + 127;
}
