import { IQ1S_DELTA, IQ4NL_VALUES } from './tables.ts';
import { KSIGNS, iq1sGrid, iq2sGrid, iq2xsGrid, iq2xxsGrid, iq3sGrid, iq3xxsGrid } from './grids.ts';
import { half, halfTable, u16at, u32at } from './half.ts';

// Importance-matrix quants, super-blocks of 256; see legacy.ts for the arithmetic convention.
// `sign(s, j)` is bit j of a sign byte: set means negative (the product's sign flip is exact).

/** Eight grid values times db with the signs of `s`, into y at e. */
function put8(y: Float32Array, e: number, g: Float32Array, row: number, db: number, s: number): void {
  const f = Math.fround;
  for (let j = 0; j < 8; j++) {
    const v = f(db * g[row + j]!);
    y[e + j] = (s >> j) & 1 ? -v : v;
  }
}

export function iq2_xxs(b: Uint8Array, y: Float32Array, n: number): void {
  const h = halfTable();
  const f = Math.fround;
  const g = iq2xxsGrid();
  for (let k = 0; k < n; k++) {
    const o = k * 66;
    const d = half(h, b, o);
    for (let gi = 0; gi < 8; gi++) {
      const q = o + 2 + 8 * gi;
      const a1 = u32at(b, q + 4);
      const db = f(f(d * (0.5 + (a1 >>> 28))) * 0.25);
      for (let l = 0; l < 4; l++) put8(y, k * 256 + 32 * gi + 8 * l, g, 8 * b[q + l]!, db, KSIGNS[(a1 >>> (7 * l)) & 127]!);
    }
  }
}

export function iq2_xs(b: Uint8Array, y: Float32Array, n: number): void {
  const h = halfTable();
  const f = Math.fround;
  const g = iq2xsGrid();
  for (let k = 0; k < n; k++) {
    const o = k * 74;
    const d = half(h, b, o);
    for (let gi = 0; gi < 8; gi++) {
      const sc = b[o + 66 + gi]!;
      const db0 = f(f(d * (0.5 + (sc & 15))) * 0.25);
      const db1 = f(f(d * (0.5 + (sc >> 4))) * 0.25);
      for (let l = 0; l < 4; l++) {
        const w = u16at(b, o + 2 + 2 * (4 * gi + l));
        put8(y, k * 256 + 32 * gi + 8 * l, g, 8 * (w & 511), l < 2 ? db0 : db1, KSIGNS[w >> 9]!);
      }
    }
  }
}

export function iq2_s(b: Uint8Array, y: Float32Array, n: number): void {
  const h = halfTable();
  const f = Math.fround;
  const g = iq2sGrid();
  for (let k = 0; k < n; k++) {
    const o = k * 82;
    const d = half(h, b, o);
    for (let gi = 0; gi < 8; gi++) {
      const sc = b[o + 74 + gi]!;
      const db0 = f(f(d * (0.5 + (sc & 15))) * 0.25);
      const db1 = f(f(d * (0.5 + (sc >> 4))) * 0.25);
      const qh = b[o + 66 + gi]!;
      for (let l = 0; l < 4; l++) {
        const idx = b[o + 2 + 4 * gi + l]! | (((qh >> (2 * l)) & 3) << 8);
        put8(y, k * 256 + 32 * gi + 8 * l, g, 8 * idx, l < 2 ? db0 : db1, b[o + 34 + 4 * gi + l]!);
      }
    }
  }
}

/** Four grid values times db with sign bits `s` starting at bit `from`. */
function put4(y: Float32Array, e: number, g: Float32Array, row: number, db: number, s: number, from: number): void {
  const f = Math.fround;
  for (let j = 0; j < 4; j++) {
    const v = f(db * g[row + j]!);
    y[e + j] = (s >> (from + j)) & 1 ? -v : v;
  }
}

export function iq3_xxs(b: Uint8Array, y: Float32Array, n: number): void {
  const h = halfTable();
  const f = Math.fround;
  const g = iq3xxsGrid();
  for (let k = 0; k < n; k++) {
    const o = k * 98;
    const d = half(h, b, o);
    for (let gi = 0; gi < 8; gi++) {
      const a = u32at(b, o + 66 + 4 * gi);
      const db = f(f(d * (0.5 + (a >>> 28))) * 0.5);
      for (let l = 0; l < 4; l++) {
        const s = KSIGNS[(a >>> (7 * l)) & 127]!;
        const e = k * 256 + 32 * gi + 8 * l;
        put4(y, e, g, 4 * b[o + 2 + 8 * gi + 2 * l]!, db, s, 0);
        put4(y, e + 4, g, 4 * b[o + 2 + 8 * gi + 2 * l + 1]!, db, s, 4);
      }
    }
  }
}

export function iq3_s(b: Uint8Array, y: Float32Array, n: number): void {
  const h = halfTable();
  const f = Math.fround;
  const g = iq3sGrid();
  for (let k = 0; k < n; k++) {
    const o = k * 110;
    const d = half(h, b, o);
    for (let gi = 0; gi < 8; gi++) {
      const sc = b[o + 106 + (gi >> 1)]!;
      const db = f(d * (1 + 2 * ((gi & 1 ? sc >> 4 : sc) & 15)));
      const qh = b[o + 66 + gi]!;
      for (let l = 0; l < 4; l++) {
        const s = b[o + 74 + 4 * gi + l]!;
        const e = k * 256 + 32 * gi + 8 * l;
        for (let t = 0; t < 2; t++) {
          const idx = b[o + 2 + 8 * gi + 2 * l + t]! | (((qh >> (2 * l + t)) & 1) << 8);
          put4(y, e + 4 * t, g, 4 * idx, db, s, 4 * t);
        }
      }
    }
  }
}

export function iq1_s(b: Uint8Array, y: Float32Array, n: number): void {
  const h = halfTable();
  const f = Math.fround;
  const g = iq1sGrid();
  for (let k = 0; k < n; k++) {
    const o = k * 50;
    const d = half(h, b, o);
    for (let gi = 0; gi < 8; gi++) {
      const qh = u16at(b, o + 34 + 2 * gi);
      const dl = f(d * (2 * ((qh >> 12) & 7) + 1));
      const delta = qh & 0x8000 ? -IQ1S_DELTA : IQ1S_DELTA;
      for (let l = 0; l < 4; l++) {
        const row = 8 * (b[o + 2 + 4 * gi + l]! | (((qh >> (3 * l)) & 7) << 8));
        const e = k * 256 + 32 * gi + 8 * l;
        for (let j = 0; j < 8; j++) y[e + j] = dl * (g[row + j]! + delta);
      }
    }
  }
}

export function iq1_m(b: Uint8Array, y: Float32Array, n: number): void {
  const h = halfTable();
  const f = Math.fround;
  const g = iq1sGrid();
  const sc = new Uint16Array(4);
  for (let k = 0; k < n; k++) {
    const o = k * 56;
    for (let i = 0; i < 4; i++) sc[i] = u16at(b, o + 48 + 2 * i);
    // The f16 scale is spread over the top nibbles of the four scale words.
    const d = h[(sc[0]! >> 12) | ((sc[1]! >> 8) & 0xf0) | ((sc[2]! >> 4) & 0xf00) | (sc[3]! & 0xf000)]!;
    for (let gi = 0; gi < 8; gi++) {
      const w = sc[gi >> 1]!;
      const sh = 6 * (gi & 1);
      const dl1 = f(d * (2 * ((w >> sh) & 7) + 1));
      const dl2 = f(d * (2 * ((w >> (sh + 3)) & 7) + 1));
      for (let l = 0; l < 4; l++) {
        const qh = b[o + 32 + 2 * gi + (l >> 1)]! >> (4 * (l & 1));
        const row = 8 * (b[o + 4 * gi + l]! | ((qh & 7) << 8));
        const delta = qh & 8 ? -IQ1S_DELTA : IQ1S_DELTA;
        const dl = l < 2 ? dl1 : dl2;
        const e = k * 256 + 32 * gi + 8 * l;
        for (let j = 0; j < 8; j++) y[e + j] = dl * (g[row + j]! + delta);
      }
    }
  }
}

export function iq4_xs(b: Uint8Array, y: Float32Array, n: number): void {
  const h = halfTable();
  const f = Math.fround;
  const kv = IQ4NL_VALUES;
  for (let k = 0; k < n; k++) {
    const o = k * 136;
    const d = half(h, b, o);
    const sh = u16at(b, o + 2);
    for (let gi = 0; gi < 8; gi++) {
      const ls = ((b[o + 4 + (gi >> 1)]! >> (4 * (gi & 1))) & 15) | (((sh >> (2 * gi)) & 3) << 4);
      const dl = f(d * (ls - 32));
      const q = o + 8 + 16 * gi;
      const e = k * 256 + 32 * gi;
      for (let j = 0; j < 16; j++) {
        y[e + j] = dl * kv[b[q + j]! & 15]!;
        y[e + 16 + j] = dl * kv[b[q + j]! >> 4]!;
      }
    }
  }
}
