/**
 * The codes of quantizeAffine (affine.ts): the kernels' `round((w - bias) / scale)` clamped to
 * [0, 2^bits - 1], in f32, packed LSB-first into uint32 words, for every group of a block at once
 * (one pass per block, see quantizeGroups there).
 *
 * The quotient v is at least -0.5 and at most about 2 · 2^bits (bias is the edge the scale was
 * fitted to, or 0 with |w| < |scale| / 2), so it converts to int32 without wrapping. Rounding:
 * `(v + 0.5) | 0` is round half away from zero for v ≥ 0 (exact in f64 for an f32 v; Math.round
 * cost 4× the whole loop here), and `(v + RINT) - RINT` is rint, half to even, by the f64
 * addition's own rounding (|v| < 2^51). Anything below 0 becomes code 0, as the kernels' clamp
 * does. The clamps are mask arithmetic (a branch per bound cost more than the division).
 *
 * Every number the loops use is a local or a literal: module constants were loaded from memory
 * (and checked) at every use, and a parameter that was 0 for one variant and RINT for the other
 * stayed a boxed value, unboxed at every use.
 */

/** 1.5 · 2^52: adding and subtracting it rounds an f64 of magnitude below 2^51 to an integer, ties to even. */
export const RINT = 6755399441055744;

/** 0.5 - 2^-13: see `code`. */
export const NEAR_HALF = 0.5 - 2 ** -13;

/** One code, exactly as the kernels compute it; `rint` is RINT (passed, see above). */
export function exactCode(v: number, bias: number, scale: number, gpu: boolean, rint: number, nBins: number): number {
  const f = Math.fround;
  const t = f(f(v - bias) / scale);
  const q = gpu ? (t + 0.5) | 0 : (t + rint - rint) | 0;
  const p = q & ~(q >> 31);
  const over = nBins - p;
  return p + (over & (over >> 31));
}

/**
 * exactCode's result, mostly without its division and f32 roundings; `inv` is 1 / scale and
 * `near` NEAR_HALF. q = (v - bias) · inv in f64 is within 2^-24 · |q| + 2^-50 of the kernels' f32
 * quotient before its last rounding (the f32 rounding of v - bias is the larger error). So while
 * q is at least 2^-13 from every half-integer, the f32 quotient is on the same side of each (f32
 * half-ulp 2^-16 below 2^9, error at most 2^-15) and not one itself, and every rounding rule gives
 * floor(q + 0.5). Past 2^9 any code clamps to 2^bits - 1 on both paths. The rest take exactCode:
 * about one value in 350 of BF16 weights (mostly exact halves) and fewer of F16; ties always; and
 * every y < 0, where |y - q - 0.5| ≥ 0.5.
 */
export function code(v: number, bias: number, inv: number, scale: number, gpu: boolean, rint: number, near: number, nBins: number): number {
  const y = (v - bias) * inv + 0.5;
  const q = y | 0;
  // `| 0`: the call's result is then an int32 as the other path's is; without it every code of
  // the loops below was boxed and unboxed.
  if (Math.abs(y - q - 0.5) > near) return exactCode(v, bias, scale, gpu, rint, nBins) | 0;
  const over = nBins - q;
  return q + (over & (over >> 31));
}

/**
 * Codes of every group of `x` into `words`, with each group's f32 scale and its bias. A group (32,
 * 64 or 128 codes of 2–8 bits) is a whole number of words, so each group's bits start a word.
 */
export function packGroups(x: Float32Array, groupSize: number, bits: number, gpu: boolean, scales: Float32Array, biases: Float32Array, words: Uint32Array): void {
  if (bits === 8) pack8(x, groupSize, gpu, scales, biases, words);
  else if (bits === 4) pack4(x, groupSize, gpu, scales, biases, words);
  else packStream(x, groupSize, bits, gpu, scales, biases, words);
}

/** 8 bits: four codes to a word, the first in the low byte; one store per word. */
function pack8(x: Float32Array, groupSize: number, gpu: boolean, scales: Float32Array, biases: Float32Array, words: Uint32Array): void {
  const rint = RINT;
  const near = NEAR_HALF;
  for (let g = 0, j = 0, wi = 0, groups = scales.length; g < groups; g++) {
    const s = scales[g]!;
    const b = biases[g]!;
    const r = 1 / s;
    for (const end = j + groupSize; j < end; j += 4) {
      words[wi++] =
        code(x[j]!, b, r, s, gpu, rint, near, 255) |
        (code(x[j + 1]!, b, r, s, gpu, rint, near, 255) << 8) |
        (code(x[j + 2]!, b, r, s, gpu, rint, near, 255) << 16) |
        (code(x[j + 3]!, b, r, s, gpu, rint, near, 255) << 24);
    }
  }
}

/** 4 bits: eight codes to a word, the first in the low nibble. */
function pack4(x: Float32Array, groupSize: number, gpu: boolean, scales: Float32Array, biases: Float32Array, words: Uint32Array): void {
  const rint = RINT;
  const near = NEAR_HALF;
  for (let g = 0, j = 0, wi = 0, groups = scales.length; g < groups; g++) {
    const s = scales[g]!;
    const b = biases[g]!;
    const r = 1 / s;
    for (const end = j + groupSize; j < end; j += 8) {
      const lo = code(x[j]!, b, r, s, gpu, rint, near, 15) | (code(x[j + 1]!, b, r, s, gpu, rint, near, 15) << 4) | (code(x[j + 2]!, b, r, s, gpu, rint, near, 15) << 8) | (code(x[j + 3]!, b, r, s, gpu, rint, near, 15) << 12);
      const hi = code(x[j + 4]!, b, r, s, gpu, rint, near, 15) | (code(x[j + 5]!, b, r, s, gpu, rint, near, 15) << 4) | (code(x[j + 6]!, b, r, s, gpu, rint, near, 15) << 8) | (code(x[j + 7]!, b, r, s, gpu, rint, near, 15) << 12);
      words[wi++] = lo | (hi << 16);
    }
  }
}

/**
 * Any width: codes are appended LSB-first to `acc` (`nb` bits so far); a code that crosses the word
 * boundary leaves its high bits in the next word.
 */
function packStream(x: Float32Array, groupSize: number, bits: number, gpu: boolean, scales: Float32Array, biases: Float32Array, words: Uint32Array): void {
  const rint = RINT;
  const near = NEAR_HALF;
  const nBins = (1 << bits) - 1;
  for (let g = 0, j = 0, wi = 0, groups = scales.length; g < groups; g++) {
    const s = scales[g]!;
    const b = biases[g]!;
    const r = 1 / s;
    let acc = 0;
    let nb = 0;
    for (const end = j + groupSize; j < end; j++) {
      const c = code(x[j]!, b, r, s, gpu, rint, near, nBins);
      acc |= c << nb;
      nb += bits;
      if (nb >= 32) {
        words[wi++] = acc;
        nb -= 32;
        acc = c >>> (bits - nb);
      }
    }
  }
}
