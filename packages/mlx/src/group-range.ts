/**
 * A group's minimum and maximum without a data-dependent branch per element. The obvious loop
 * (`if (v < min) min = v`) mispredicts every time the running extreme moves (a few times in a
 * group of 32 random weights) and cost half of an 8-bit quantize. Here each value's f32 bits
 * become an order-preserving integer key, and the extremes are kept with mask arithmetic.
 *
 * The key is ±(magnitude bits >> 1): halving keeps differences of two keys inside int32. It drops
 * the lowest mantissa bit, so it is exact only for a group whose values all have that bit clear —
 * always true of F16 and BF16 weights widened to f32 (13 or 16 zero bits), not of every F32 group;
 * such a group (and one holding NaN or ±Infinity) is left to the caller's exact loop.
 */

/** |key| of +Infinity: a group whose extreme key reaches it holds NaN or ±Infinity. */
const INF_KEY = 0x7f800000 >> 1;

const scratchF = new Float32Array(1);
const scratchI = new Int32Array(scratchF.buffer);

function keyValue(k: number): number {
  scratchI[0] = k < 0 ? (-k << 1) | -0x80000000 : k << 1;
  return scratchF[0]!;
}

/**
 * Writes [min, max] of `bits[start .. start + n)` (f32 bit patterns) into `out` and returns true,
 * or returns false (writing nothing) when the group needs the exact loop. With `maxFromZero` the
 * maximum starts at 0 (the MLX GPU kernel's `w_max`). Zeros come back as +0 whatever their sign
 * (the kernels' scale and bias do not depend on it: see affine.ts).
 */
export function groupRange(bits: Int32Array, start: number, n: number, maxFromZero: boolean, out: Float64Array): boolean {
  let lo = 0x3fffffff;
  let hi = maxFromZero ? 0 : -0x3fffffff;
  let low = 0;
  for (let j = start, end = start + n; j < end; j++) {
    const a = bits[j]!;
    low |= a;
    const sign = a >> 31;
    const k = (((a & 0x7fffffff) >> 1) ^ sign) - sign;
    // d >> 31 is all ones exactly when d < 0: lo moves down to k, hi up to k.
    const dl = (k - lo) | 0;
    lo = (lo + (dl & (dl >> 31))) | 0;
    const dh = (k - hi) | 0;
    hi = (hi + (dh & ~(dh >> 31))) | 0;
  }
  if ((low & 1) !== 0 || lo <= -INF_KEY || hi >= INF_KEY) return false;
  out[0] = keyValue(lo);
  out[1] = keyValue(hi);
  return true;
}
