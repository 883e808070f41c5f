import { half, halfTable } from './half.ts';

const POW3 = [1, 3, 9, 27, 81];

/** Trit n of a base-3 packed byte: the byte is a fixed-point fraction, 3^n shifts trit n to the top. */
const trit = (byte: number, n: number): number => ((((byte * POW3[n]!) & 255) * 3) >> 8) - 1;

export function tq1_0(b: Uint8Array, y: Float32Array, n: number): void {
  const h = halfTable();
  for (let k = 0; k < n; k++) {
    const o = k * 54;
    const d = half(h, b, o + 52);
    const e = k * 256;
    for (let t = 0; t < 5; t++) {
      for (let m = 0; m < 32; m++) y[e + 32 * t + m] = d * trit(b[o + m]!, t);
      for (let m = 0; m < 16; m++) y[e + 160 + 16 * t + m] = d * trit(b[o + 32 + m]!, t);
    }
    for (let t = 0; t < 4; t++) for (let j = 0; j < 4; j++) y[e + 240 + 4 * t + j] = d * trit(b[o + 48 + j]!, t);
  }
}

export function tq2_0(b: Uint8Array, y: Float32Array, n: number): void {
  const h = halfTable();
  for (let k = 0; k < n; k++) {
    const o = k * 66;
    const d = half(h, b, o + 64);
    const e = k * 256;
    for (let i = 0; i < 2; i++) {
      for (let s = 0; s < 4; s++) {
        for (let l = 0; l < 32; l++) y[e + 128 * i + 32 * s + l] = d * (((b[o + 32 * i + l]! >> (2 * s)) & 3) - 1);
      }
    }
  }
}
