/**
 * Little-endian views of tensor bytes. MLX writes unpadded safetensors headers, so tensor data can
 * start at any byte offset: a typed-array view is used only when the bytes happen to be aligned
 * (and the host is little-endian, as every platform MLX runs on is); otherwise they are copied.
 */
import { f32BitsToBf16, f32BitsToF16 } from '@tensorport/core';
import { BF16_MAX, BF16_SPLIT, bf16ToNumber, F16_MAX, F16_SPLIT, f16Table, roundBf16Bits, roundF16Bits, splitRound } from './float.ts';

const F16_MIN_NORMAL = 2 ** -14;
const F32_MIN_NORMAL = 2 ** -126;
/** f32 bits of F16's smallest normal and of its overflow midpoint 65520. */
const F16_NORMAL_BITS = 0x38800000;
const F16_NORMAL_END = 0x477ff000;

export type FloatDType = 'F16' | 'BF16' | 'F32';

export const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

export function floatBytes(dtype: FloatDType): number {
  return dtype === 'F32' ? 4 : 2;
}

export function wordsOf(bytes: Uint8Array): Uint32Array {
  const n = bytes.byteLength >>> 2;
  if (LITTLE_ENDIAN && bytes.byteOffset % 4 === 0) return new Uint32Array(bytes.buffer, bytes.byteOffset, n);
  const out = new Uint32Array(n);
  for (let i = 0, p = 0; i < n; i++, p += 4) {
    out[i] = (bytes[p]! | (bytes[p + 1]! << 8) | (bytes[p + 2]! << 16) | (bytes[p + 3]! << 24)) >>> 0;
  }
  return out;
}

export function bytesOfWords(words: Uint32Array): Uint8Array {
  if (LITTLE_ENDIAN) return new Uint8Array(words.buffer, words.byteOffset, words.byteLength);
  const out = new Uint8Array(words.length * 4);
  for (let i = 0, p = 0; i < words.length; i++, p += 4) {
    const w = words[i]!;
    out[p] = w & 0xff;
    out[p + 1] = (w >>> 8) & 0xff;
    out[p + 2] = (w >>> 16) & 0xff;
    out[p + 3] = w >>> 24;
  }
  return out;
}

function u16At(bytes: Uint8Array, p: number): number {
  return bytes[p]! | (bytes[p + 1]! << 8);
}

/** 16-bit elements of `bytes`: a view when aligned on a little-endian host, else a copy. */
function u16Of(bytes: Uint8Array): Uint16Array {
  const n = bytes.byteLength >>> 1;
  if (LITTLE_ENDIAN && bytes.byteOffset % 2 === 0) return new Uint16Array(bytes.buffer, bytes.byteOffset, n);
  const out = new Uint16Array(n);
  for (let i = 0; i < n; i++) out[i] = bytes[2 * i]! | (bytes[2 * i + 1]! << 8);
  return out;
}

/** Widens F16/BF16/F32 bytes to f32 values (exactly). */
export function decodeFloats(bytes: Uint8Array, dtype: FloatDType, out?: Float32Array): Float32Array {
  const n = bytes.byteLength / floatBytes(dtype);
  const dst = out ?? new Float32Array(n);
  if (dtype === 'F32') {
    if (LITTLE_ENDIAN && bytes.byteOffset % 4 === 0) {
      dst.set(new Float32Array(bytes.buffer, bytes.byteOffset, n));
    } else {
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      for (let i = 0; i < n; i++) dst[i] = view.getFloat32(i * 4, true);
    }
    return dst;
  }
  const src = u16Of(bytes);
  // Int32 lanes: with Uint32Array views every value above 2^31 (the negative floats) left
  // V8's int32 path, and the loop took half as long again.
  const bits = new Int32Array(dst.buffer, dst.byteOffset, n);
  if (dtype === 'F16') {
    const t = f16Table();
    widenF16(src, bits, new Int32Array(t.buffer, t.byteOffset, t.length));
  } else {
    widenBf16(src, bits);
  }
  return dst;
}

// Four elements a turn in the two loops below: a turn's own cost (V8's checks of the arrays, the
// counter's overflow, the interrupt check) was most of a one-element turn, and the F16 decode
// ran at 1.9 ns per element instead of 1.0.

function widenF16(src: Uint16Array, bits: Int32Array, table: Int32Array): void {
  const n = src.length;
  const whole = n & ~3;
  let i = 0;
  for (; i < whole; i += 4) {
    const a = src[i]!;
    const b = src[i + 1]!;
    const c = src[i + 2]!;
    const d = src[i + 3]!;
    bits[i] = table[a]!;
    bits[i + 1] = table[b]!;
    bits[i + 2] = table[c]!;
    bits[i + 3] = table[d]!;
  }
  for (; i < n; i++) bits[i] = table[src[i]!]!;
}

function widenBf16(src: Uint16Array, bits: Int32Array): void {
  const n = src.length;
  const whole = n & ~3;
  let i = 0;
  for (; i < whole; i += 4) {
    bits[i] = src[i]! << 16;
    bits[i + 1] = src[i + 1]! << 16;
    bits[i + 2] = src[i + 2]! << 16;
    bits[i + 3] = src[i + 3]! << 16;
  }
  for (; i < n; i++) bits[i] = src[i]! << 16;
}

/** Encodes values (rounded to `dtype`, ties to even, from their f32 value) as little-endian bytes. */
export function encodeFloats(values: ArrayLike<number>, dtype: FloatDType, out?: Uint8Array): Uint8Array {
  const n = values.length;
  const dst = out ?? new Uint8Array(n * floatBytes(dtype));
  if (dtype === 'F32') {
    if (LITTLE_ENDIAN && dst.byteOffset % 4 === 0) {
      new Float32Array(dst.buffer, dst.byteOffset, n).set(values);
    } else {
      const view = new DataView(dst.buffer, dst.byteOffset, dst.byteLength);
      for (let i = 0; i < n; i++) view.setFloat32(i * 4, values[i]!, true);
    }
    return dst;
  }
  const f32 = values instanceof Float32Array ? values : Float32Array.from(values);
  const bits = new Int32Array(f32.buffer, f32.byteOffset, n);
  if (LITTLE_ENDIAN && dst.byteOffset % 2 === 0) {
    const u16 = new Uint16Array(dst.buffer, dst.byteOffset, n);
    // One loop per dtype: a call through a variable holding either function is not inlined.
    if (dtype === 'F16') {
      for (let i = 0; i < n; i++) {
        // F16's normal range inline (as in f32BitsToF16): 10-15 % faster than the call per element.
        const x = bits[i]!;
        const a = x & 0x7fffffff;
        u16[i] = a >= F16_NORMAL_BITS && a < F16_NORMAL_END ? ((x >> 16) & 0x8000) | ((a - 0x38000000 + 0xfff + ((a >> 13) & 1)) >> 13) : f32BitsToF16(x);
      }
    } else {
      for (let i = 0; i < n; i++) u16[i] = f32BitsToBf16(bits[i]!);
    }
  } else {
    const toHalf = dtype === 'F16' ? f32BitsToF16 : f32BitsToBf16;
    for (let i = 0; i < n; i++) {
      const h = toHalf(bits[i]!);
      dst[i * 2] = h & 0xff;
      dst[i * 2 + 1] = h >>> 8;
    }
  }
  return dst;
}

/** Value of `x` rounded to `dtype` (ties to even, from its f32 value), as a number. */
export function roundTo(dtype: FloatDType, x: number): number {
  const y = Math.fround(x);
  if (dtype === 'F32') return y;
  // Normal finite results by splitting (float.ts), the rest by the bit conversion.
  const a = Math.abs(y);
  if (dtype === 'BF16') return a >= F32_MIN_NORMAL && a <= BF16_MAX ? splitRound(y, BF16_SPLIT) : bf16ToNumber(roundBf16Bits(y));
  return a >= F16_MIN_NORMAL && a <= F16_MAX ? splitRound(y, F16_SPLIT) : f16Table()[roundF16Bits(y)]!;
}


