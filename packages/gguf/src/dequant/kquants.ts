import { half, halfTable } from './half.ts';

// Super-blocks of 256 elements; see legacy.ts for the arithmetic convention.

export function q2_k(b: Uint8Array, y: Float32Array, n: number): void {
  const h = halfTable();
  const f = Math.fround;
  for (let k = 0; k < n; k++) {
    const o = k * 84;
    const d = half(h, b, o + 80);
    const dmin = half(h, b, o + 82);
    const base = k * 256;
    for (let s = 0; s < 16; s++) {
      const sc = b[o + s]!;
      const dl = f(d * (sc & 15));
      const ml = f(dmin * (sc >> 4));
      // Elements 16s..16s+15: qs byte 32·(e/128) + e%32, bits 2·((e%128)/32).
      const e0 = s * 16;
      const shift = 2 * ((e0 % 128) >> 5);
      const qo = o + 16 + 32 * (e0 >> 7) + (e0 % 32);
      for (let j = 0; j < 16; j++) y[base + e0 + j] = f(dl * ((b[qo + j]! >> shift) & 3)) - ml;
    }
  }
}

export function q3_k(b: Uint8Array, y: Float32Array, n: number): void {
  const h = halfTable();
  const f = Math.fround;
  for (let k = 0; k < n; k++) {
    const o = k * 110;
    const d = half(h, b, o + 108);
    const sc = o + 96;
    const base = k * 256;
    for (let s = 0; s < 16; s++) {
      const lo = s < 8 ? b[sc + s]! & 15 : b[sc + s - 8]! >> 4;
      const hi = (b[sc + 8 + (s % 4)]! >> (2 * (s >> 2))) & 3;
      const dl = f(d * ((lo | (hi << 4)) - 32));
      const e0 = s * 16;
      const shift = 2 * ((e0 % 128) >> 5);
      const qo = o + 32 + 32 * (e0 >> 7) + (e0 % 32);
      const hshift = e0 >> 5;
      const ho = o + (e0 % 32);
      for (let j = 0; j < 16; j++) {
        const q = ((b[qo + j]! >> shift) & 3) - (((b[ho + j]! >> hshift) & 1) === 1 ? 0 : 4);
        y[base + e0 + j] = dl * q;
      }
    }
  }
}

/** The 6-bit scale and min of sub-block t (0..7) from the 12 packed bytes at p. */
function scaleMin(b: Uint8Array, p: number, t: number, out: Int32Array): void {
  if (t < 4) {
    out[0] = b[p + t]! & 63;
    out[1] = b[p + t + 4]! & 63;
  } else {
    out[0] = (b[p + t + 4]! & 15) | ((b[p + t - 4]! >> 6) << 4);
    out[1] = (b[p + t + 4]! >> 4) | ((b[p + t]! >> 6) << 4);
  }
}

/**
 * Q4_K and Q5_K: 8 sub-blocks of 32 with 6-bit scales and mins; `qh` (Q5_K only) adds bit 4 of
 * element 32t + j at bit t of qh[j].
 */
function q45k(b: Uint8Array, y: Float32Array, n: number, size: number, qh: number | null): void {
  const h = halfTable();
  const f = Math.fround;
  const sm = new Int32Array(2);
  const qsAt = qh === null ? 16 : 48;
  for (let k = 0; k < n; k++) {
    const o = k * size;
    const d = half(h, b, o);
    const dmin = half(h, b, o + 2);
    const base = k * 256;
    for (let t = 0; t < 8; t++) {
      scaleMin(b, o + 4, t, sm);
      const dl = f(d * sm[0]!);
      const ml = f(dmin * sm[1]!);
      const qo = o + qsAt + 32 * (t >> 1);
      const shift = (t & 1) * 4;
      for (let j = 0; j < 32; j++) {
        const lo = (b[qo + j]! >> shift) & 15;
        const q = qh === null ? lo : lo | (((b[o + qh + j]! >> t) & 1) << 4);
        y[base + 32 * t + j] = f(dl * q) - ml;
      }
    }
  }
}

export const q4_k = (b: Uint8Array, y: Float32Array, n: number): void => q45k(b, y, n, 144, null);
export const q5_k = (b: Uint8Array, y: Float32Array, n: number): void => q45k(b, y, n, 176, 16);

export function q6_k(b: Uint8Array, y: Float32Array, n: number): void {
  const h = halfTable();
  const f = Math.fround;
  for (let k = 0; k < n; k++) {
    const o = k * 210;
    const d = half(h, b, o + 208);
    const base = k * 256;
    for (let s = 0; s < 16; s++) {
      const dl = f(d * ((b[o + 192 + s]! << 24) >> 24));
      const e0 = s * 16;
      const hh = e0 >> 7;
      const w = (e0 % 128) >> 5;
      const l0 = e0 % 32;
      const lo = o + 64 * hh + 32 * (w & 1) + l0;
      const lshift = w < 2 ? 0 : 4;
      const hi = o + 128 + 32 * hh + l0;
      for (let j = 0; j < 16; j++) {
        const q = (((b[lo + j]! >> lshift) & 15) | (((b[hi + j]! >> (2 * w)) & 3) << 4)) - 32;
        y[base + e0 + j] = dl * q;
      }
    }
  }
}
