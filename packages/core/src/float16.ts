/**
 * Exact conversions between IEEE binary16 (F16), bfloat16 (BF16), binary32 and binary64, on raw
 * bit patterns held in typed arrays. Everything runs on integer views: reading a NaN through a
 * Float32Array element may canonicalize it, and integer math keeps payloads.
 *
 * Rules (IEEE 754, what x86 F16C / ARM hardware does):
 * - narrowing rounds to nearest, ties to even; values past the largest finite become ±Inf;
 *   subnormals are produced and read exactly;
 * - ±Inf stays ±Inf; NaN stays NaN with its sign, the top payload bits kept and the quiet bit set
 *   (every result NaN is quiet, so a signalling NaN never survives a cast).
 */

/** F32 bits → F16 bits, one value. */
export function f32BitsToF16(x: number): number {
  const sign = (x >>> 16) & 0x8000;
  const a = x & 0x7fffffff;
  if (a >= 0x7f800000) return sign | (a === 0x7f800000 ? 0x7c00 : 0x7e00 | ((a >>> 13) & 0x3ff));
  // 65520 (= 0x477ff000) is the midpoint between 65504 (max, odd mantissa) and 2^16: ties go up.
  if (a >= 0x477ff000) return sign | 0x7c00;
  if (a >= 0x38800000) {
    // Normal in F16: rebias the exponent (127 → 15), round the 13 dropped bits to nearest even.
    return sign | ((a - 0x38000000 + 0xfff + ((a >>> 13) & 1)) >>> 13);
  }
  // Below 2^-25 (and 2^-25 itself, a tie with 0) everything rounds to ±0.
  if (a <= 0x33000000) return sign;
  // F16 subnormal: value = m·2^(e-150) in units of 2^-24, i.e. m >> (126 - e), rounded.
  const e = a >>> 23;
  const m = (a & 0x7fffff) | 0x800000;
  const shift = 126 - e;
  let q = m >>> shift;
  const rest = m & ((1 << shift) - 1);
  const half = 1 << (shift - 1);
  if (rest > half || (rest === half && (q & 1) === 1)) q++;
  return sign | q;
}

/** F16 bits → F32 bits, one value (exact). */
export function f16BitsToF32(h: number): number {
  const sign = (h & 0x8000) << 16;
  const e = (h >>> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0x1f) return (sign | (m === 0 ? 0x7f800000 : 0x7fc00000 | (m << 13))) >>> 0;
  if (e !== 0) return (sign | ((e + 112) << 23) | (m << 13)) >>> 0;
  if (m === 0) return sign >>> 0;
  // Subnormal F16 is normal in F32: shift the leading 1 into the implicit bit.
  const lead = 31 - Math.clz32(m); // 0..9
  return (sign | ((lead + 103) << 23) | ((m << (23 - lead)) & 0x7fffff)) >>> 0;
}

/** F32 bits → BF16 bits, one value: BF16 is the top half of F32, so only rounding is needed. */
export function f32BitsToBf16(x: number): number {
  const a = x & 0x7fffffff;
  if (a > 0x7f800000) return ((x >>> 16) | 0x40) & 0xffff;
  // The carry of the rounding increment reaches the exponent, giving ±Inf on overflow.
  return ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff;
}

/** BF16 bits → F32 bits, one value (exact). */
export function bf16BitsToF32(h: number): number {
  const x = (h << 16) >>> 0;
  return (x & 0x7fffffff) > 0x7f800000 ? (x | 0x400000) >>> 0 : x;
}

let f16Table: Uint32Array | null = null;

/** All 65536 F16 → F32 results (256 KiB, built on first use): one load per element. */
function f16ToF32Table(): Uint32Array {
  if (!f16Table) {
    f16Table = new Uint32Array(65536);
    for (let h = 0; h < 65536; h++) f16Table[h] = f16BitsToF32(h);
  }
  return f16Table;
}

export function f32ArrayToF16(src: Uint32Array, dst: Uint16Array): void {
  checkLengths(src, dst);
  for (let i = 0; i < src.length; i++) dst[i] = f32BitsToF16(src[i]!);
}

export function f16ArrayToF32(src: Uint16Array, dst: Uint32Array): void {
  checkLengths(src, dst);
  const table = f16ToF32Table();
  for (let i = 0; i < src.length; i++) dst[i] = table[src[i]!]!;
}

export function f32ArrayToBf16(src: Uint32Array, dst: Uint16Array): void {
  checkLengths(src, dst);
  for (let i = 0; i < src.length; i++) dst[i] = f32BitsToBf16(src[i]!);
}

export function bf16ArrayToF32(src: Uint16Array, dst: Uint32Array): void {
  checkLengths(src, dst);
  for (let i = 0; i < src.length; i++) dst[i] = bf16BitsToF32(src[i]!);
}

export function f16ArrayToBf16(src: Uint16Array, dst: Uint16Array): void {
  checkLengths(src, dst);
  const table = f16ToF32Table();
  // Exact via F32 (F16 ⊂ F32), then one rounding.
  for (let i = 0; i < src.length; i++) dst[i] = f32BitsToBf16(table[src[i]!]!);
}

export function bf16ArrayToF16(src: Uint16Array, dst: Uint16Array): void {
  checkLengths(src, dst);
  for (let i = 0; i < src.length; i++) dst[i] = f32BitsToF16(bf16BitsToF32(src[i]!));
}

/**
 * F64 (as little-endian pairs of u32: lo, hi) → F32 bits. Rounding twice (F64 → F32 → F16) can
 * differ from rounding once, so the F64 → F16/BF16 paths first round to F32 *to odd*: truncate, then
 * set the last bit if anything was dropped. With at least two spare bits (F32 has 24 significant
 * bits; F16 needs 11, BF16 8) a second round-to-nearest-even then equals the direct rounding.
 */
function f64ToF32Bits(lo: number, hi: number, toOdd: boolean): number {
  const sign = hi & 0x80000000;
  const ah = hi & 0x7fffffff;
  if (ah >= 0x7ff00000) {
    if (ah === 0x7ff00000 && lo === 0) return (sign | 0x7f800000) >>> 0;
    // NaN: keep the top 23 payload bits (20 from hi, 3 from lo), set quiet.
    return (sign | 0x7fc00000 | ((ah & 0xfffff) << 3) | (lo >>> 29)) >>> 0;
  }
  const e = ah >>> 20; // biased by 1023
  // Significand with implicit bit as hi part (21 bits) and lo (32 bits): 53 bits total.
  const mh = e === 0 ? ah & 0xfffff : (ah & 0xfffff) | 0x100000;
  const exp = (e === 0 ? 1 : e) - 1023 + 127; // F32 biased exponent if normal
  if (exp >= 255) return (sign | (toOdd ? 0x7f7fffff : 0x7f800000)) >>> 0;
  // Result = significand >> drop, where drop is 29 for F32 normals, more for subnormals.
  let drop = 29;
  if (exp <= 0) drop += 1 - exp;
  if (drop >= 54) {
    // Far below the smallest F32 subnormal: 0, or 1 ulp to odd if nonzero.
    const nonzero = mh !== 0 || lo !== 0;
    return (sign | (toOdd && nonzero ? 1 : 0)) >>> 0;
  }
  // Split the 53-bit significand (mh:lo) into kept bits q and dropped bits: `top` is the first 32
  // dropped bits (left-aligned), `below` says whether any dropped bit after those is set.
  let q: number;
  let top: number;
  let below: boolean;
  if (drop < 32) {
    q = ((mh << (32 - drop)) | (lo >>> drop)) >>> 0;
    top = (lo << (32 - drop)) >>> 0;
    below = false;
  } else if (drop === 32) {
    q = mh;
    top = lo;
    below = false;
  } else {
    const d = drop - 32; // 1..21
    q = mh >>> d;
    top = ((mh << (32 - d)) | (lo >>> d)) >>> 0;
    below = (lo & ((1 << d) - 1)) !== 0;
  }
  const restNonzero = top !== 0 || below;
  const restHigh = top > 0x80000000 || (top === 0x80000000 && below) ? 1 : top === 0x80000000 ? 0 : -1;
  if (toOdd) {
    if (restNonzero) q |= 1;
  } else if (restHigh > 0 || (restHigh === 0 && (q & 1) === 1)) {
    q++;
  }
  // q holds the implicit bit for normals: adding the exponent field lets a carry overflow into it.
  const bits = exp <= 0 ? q : ((exp - 1) << 23) + q;
  if (bits >= 0x7f800000) return (sign | (toOdd ? 0x7f7fffff : 0x7f800000)) >>> 0;
  return (sign | bits) >>> 0;
}

// One-element scratch: storing a double into a Float32Array rounds it to nearest even (ToFloat32).
const scratchF32 = new Float32Array(1);
const scratchU32 = new Uint32Array(scratchF32.buffer);

/** F64 value → F32 bits rounded to odd (see f64ToF32Bits), via the hardware rounding; not for NaN. */
function f64ToF32Odd(x: number): number {
  scratchF32[0] = x;
  const f = scratchF32[0]!;
  const bits = scratchU32[0]!;
  // Inexact with an even last bit: step to the odd neighbour on x's side (toward zero if f overshot).
  if (f !== x && (bits & 1) === 0) return Math.abs(f) > Math.abs(x) ? bits - 1 : bits + 1;
  return bits;
}

/**
 * The F64 loops read values through a Float64Array when the input is 8-byte aligned (hardware
 * rounding is ~5× faster than the integer path); NaN, and unaligned input, take the integer path.
 */
function f64Loop(src: Uint32Array, dst: Uint16Array | Uint32Array, viaF32: (bits: number) => number, toOdd: boolean): void {
  checkLengths(src, dst, 2);
  if (src.byteOffset % 8 === 0) {
    const v = new Float64Array(src.buffer, src.byteOffset, dst.length);
    for (let i = 0; i < dst.length; i++) {
      const x = v[i]!;
      if (x === x) {
        if (toOdd) dst[i] = viaF32(f64ToF32Odd(x));
        else {
          scratchF32[0] = x;
          dst[i] = scratchU32[0]!;
        }
      } else dst[i] = viaF32(f64ToF32Bits(src[2 * i]!, src[2 * i + 1]!, toOdd));
    }
    return;
  }
  for (let i = 0; i < dst.length; i++) dst[i] = viaF32(f64ToF32Bits(src[2 * i]!, src[2 * i + 1]!, toOdd));
}

const same = (bits: number): number => bits;

export function f64ArrayToF32(src: Uint32Array, dst: Uint32Array): void {
  f64Loop(src, dst, same, false);
}

export function f64ArrayToF16(src: Uint32Array, dst: Uint16Array): void {
  f64Loop(src, dst, f32BitsToF16, true);
}

export function f64ArrayToBf16(src: Uint32Array, dst: Uint16Array): void {
  f64Loop(src, dst, f32BitsToBf16, true);
}

function checkLengths(src: { length: number }, dst: { length: number }, ratio = 1): void {
  if (src.length !== dst.length * ratio) throw new RangeError(`conversion of ${src.length / ratio} values into ${dst.length}`);
}
