import { FP4_VALUES, IQ4NL_VALUES } from './tables.ts';
import { half, halfTable, u32at } from './half.ts';

// Every kernel: `n` blocks from `b` (block k at k·typeSize) into `y` (block k at k·blockSize).
// Arithmetic is float32 as in gguf-py (numpy float32, one rounding per operation): a product or sum
// of two float32 values is computed exactly enough in float64 that Math.fround (or the store into
// the Float32Array) gives the float32 result. The nibble layout of the 32-element types: byte k
// holds element k (low nibble) and element k + 16 (high nibble).

export function q4_0(b: Uint8Array, y: Float32Array, n: number): void {
  const h = halfTable();
  for (let k = 0; k < n; k++) {
    const o = k * 18;
    const d = half(h, b, o);
    const e = k * 32;
    for (let j = 0; j < 16; j++) {
      const q = b[o + 2 + j]!;
      y[e + j] = d * ((q & 15) - 8);
      y[e + j + 16] = d * ((q >> 4) - 8);
    }
  }
}

export function q4_1(b: Uint8Array, y: Float32Array, n: number): void {
  const h = halfTable();
  const f = Math.fround;
  for (let k = 0; k < n; k++) {
    const o = k * 20;
    const d = half(h, b, o);
    const m = half(h, b, o + 2);
    const e = k * 32;
    for (let j = 0; j < 16; j++) {
      const q = b[o + 4 + j]!;
      y[e + j] = f(d * (q & 15)) + m;
      y[e + j + 16] = f(d * (q >> 4)) + m;
    }
  }
}

export function q5_0(b: Uint8Array, y: Float32Array, n: number): void {
  const h = halfTable();
  for (let k = 0; k < n; k++) {
    const o = k * 22;
    const d = half(h, b, o);
    const qh = u32at(b, o + 2);
    const e = k * 32;
    for (let j = 0; j < 16; j++) {
      const q = b[o + 6 + j]!;
      y[e + j] = d * (((q & 15) | (((qh >>> j) & 1) << 4)) - 16);
      y[e + j + 16] = d * (((q >> 4) | (((qh >>> (j + 16)) & 1) << 4)) - 16);
    }
  }
}

export function q5_1(b: Uint8Array, y: Float32Array, n: number): void {
  const h = halfTable();
  const f = Math.fround;
  for (let k = 0; k < n; k++) {
    const o = k * 24;
    const d = half(h, b, o);
    const m = half(h, b, o + 2);
    const qh = u32at(b, o + 4);
    const e = k * 32;
    for (let j = 0; j < 16; j++) {
      const q = b[o + 8 + j]!;
      y[e + j] = f(d * ((q & 15) | (((qh >>> j) & 1) << 4))) + m;
      y[e + j + 16] = f(d * ((q >> 4) | (((qh >>> (j + 16)) & 1) << 4))) + m;
    }
  }
}

export function q8_0(b: Uint8Array, y: Float32Array, n: number): void {
  const h = halfTable();
  for (let k = 0; k < n; k++) {
    const o = k * 34;
    const d = half(h, b, o);
    const e = k * 32;
    for (let j = 0; j < 32; j++) y[e + j] = ((b[o + 2 + j]! << 24) >> 24) * d;
  }
}

export function iq4_nl(b: Uint8Array, y: Float32Array, n: number): void {
  const h = halfTable();
  const kv = IQ4NL_VALUES;
  for (let k = 0; k < n; k++) {
    const o = k * 18;
    const d = half(h, b, o);
    const e = k * 32;
    for (let j = 0; j < 16; j++) {
      const q = b[o + 2 + j]!;
      y[e + j] = d * kv[q & 15]!;
      y[e + j + 16] = d * kv[q >> 4]!;
    }
  }
}

/**
 * E8M0 exponent e as 2^(e-128), the "half" scale that pairs with the doubled E2M1 values (ggml
 * builds e = 0 and 1 as f32 subnormals: the same values).
 */
export const e8m0Half = (e: number): number => 2 ** (e - 128);

export function mxfp4(b: Uint8Array, y: Float32Array, n: number): void {
  const kv = FP4_VALUES;
  for (let k = 0; k < n; k++) {
    const o = k * 17;
    const d = e8m0Half(b[o]!);
    const e = k * 32;
    for (let j = 0; j < 16; j++) {
      const q = b[o + 1 + j]!;
      y[e + j] = d * kv[q & 15]!;
      y[e + j + 16] = d * kv[q >> 4]!;
    }
  }
}

/** Unsigned E4M3 (bias 7) times 0.5; 0x00 and 0x7F decode to 0. Bit 7 is ignored, as in ggml. */
function ue4m3Half(x: number): number {
  if (x === 0 || x === 0x7f) return 0;
  const exp = (x >> 3) & 15;
  const man = x & 7;
  const raw = exp === 0 ? man * 2 ** -9 : (1 + man / 8) * 2 ** (exp - 7);
  return raw * 0.5;
}

export function nvfp4(b: Uint8Array, y: Float32Array, n: number): void {
  const kv = FP4_VALUES;
  for (let k = 0; k < n; k++) {
    const o = k * 36;
    const e = k * 64;
    for (let s = 0; s < 4; s++) {
      const d = ue4m3Half(b[o + s]!);
      for (let j = 0; j < 8; j++) {
        const q = b[o + 4 + 8 * s + j]!;
        y[e + 16 * s + j] = d * kv[q & 15]!;
        y[e + 16 * s + 8 + j] = d * kv[q >> 4]!;
      }
    }
  }
}
