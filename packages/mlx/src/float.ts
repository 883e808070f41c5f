/**
 * Exact conversions between the float dtypes MLX stores scales and biases in (F16, BF16, F32) and
 * JS numbers. Rounding to a narrower format is IEEE round-to-nearest-even from the exact double,
 * which is what `static_cast<float16_t>` and MLX's bfloat16 constructor do for finite values.
 */

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** Bits of an f32 value (the number is first rounded to f32). */
export function f32Bits(x: number): number {
  f32[0] = x;
  return u32[0]!;
}

export function f32FromBits(bits: number): number {
  u32[0] = bits;
  return f32[0]!;
}

/** f16 bits → value; built once, 256 KiB, so decoding is one lookup. */
let F16_TABLE: Float32Array | null = null;
export function f16Table(): Float32Array {
  if (F16_TABLE) return F16_TABLE;
  const t = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) t[h] = f16ToNumber(h);
  F16_TABLE = t;
  return t;
}

export function f16ToNumber(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const man = h & 0x3ff;
  if (exp === 0) return sign * man * 2 ** -24;
  if (exp === 31) return man ? NaN : sign * Infinity;
  return sign * (1024 + man) * 2 ** (exp - 25);
}

/** Round a number to the nearest f16 (ties to even) and return its bits. */
export function numberToF16(x: number): number {
  if (Number.isNaN(x)) return 0x7e00;
  const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
  let a = Math.abs(x);
  if (a >= 65520) return sign | 0x7c00; // 65520 is the midpoint to the next binade: ties to even go up
  if (a < 2 ** -14) {
    // Subnormal: units of 2^-24, rounded half to even.
    const units = roundHalfEven(a * 2 ** 24);
    return sign | units; // units == 1024 carries into the smallest normal, which is the same bits
  }
  let exp = Math.floor(Math.log2(a));
  // log2 can be off by one near powers of two.
  if (2 ** exp > a) exp--;
  else if (2 ** (exp + 1) <= a) exp++;
  let man = roundHalfEven(a * 2 ** (10 - exp)); // in [1024, 2048]
  if (man === 2048) {
    man = 1024;
    exp++;
  }
  if (exp > 15) return sign | 0x7c00;
  return sign | ((exp + 15) << 10) | (man - 1024);
}

/** Nearest f16 value, as a number. */
export function roundF16(x: number): number {
  return f16Table()[numberToF16(x)]!;
}

export function bf16ToNumber(b: number): number {
  return f32FromBits((b & 0xffff) << 16);
}

/** Round to bf16 (ties to even) from the f32 value of `x`, as MLX's bfloat16 does; NaN → 0x7fc0. */
export function numberToBf16(x: number): number {
  // Double rounding f64 → f32 → bf16 could differ from one rounding; callers pass f32 values.
  const bits = f32Bits(x);
  if ((bits & 0x7fffffff) > 0x7f800000) return 0x7fc0 | ((bits >>> 16) & 0x8000);
  return ((bits + (((bits >>> 16) & 1) + 0x7fff)) >>> 16) & 0xffff;
}

export function roundBf16(x: number): number {
  return bf16ToNumber(numberToBf16(x));
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

/** f32 bits → f16 bits, ties to even; fast path for whole arrays. NaN stays NaN (quiet). */
export function f32BitsToF16(x: number): number {
  const sign = (x >>> 16) & 0x8000;
  const e = (x >>> 23) & 0xff;
  const m = x & 0x7fffff;
  if (e === 255) return sign | 0x7c00 | (m ? 0x200 : 0);
  const he = e - 112; // rebias 127 → 15
  if (he >= 31) return sign | 0x7c00;
  if (he > 0) {
    const rest = m & 0x1fff;
    let h = (he << 10) | (m >>> 13);
    if (rest > 0x1000 || (rest === 0x1000 && h & 1)) h++; // a carry into the exponent is correct, up to inf
    return sign | h;
  }
  // f16 subnormal: count units of 2^-24.
  const shift = 14 - he;
  if (shift >= 25) return sign;
  const full = m | 0x800000;
  let h = full >>> shift;
  const rest = full & ((1 << shift) - 1);
  const half = 1 << (shift - 1);
  if (rest > half || (rest === half && h & 1)) h++;
  return sign | h;
}

/**
 * f16 bits nearest to `x`. Going through f32 first is exact for the results of one +, -, *, / on
 * f16 operands (f32 has 24 ≥ 2·11+2 significant bits, so the double rounding is innocuous).
 */
export function roundF16Bits(x: number): number {
  return f32BitsToF16(f32Bits(x));
}
