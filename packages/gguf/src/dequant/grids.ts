import { IQ1S_GRID, IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID } from './tables.ts';

interface GridData {
  readonly rows: number;
  readonly width: number;
  readonly signed: boolean;
  readonly base64: string;
}

function decode(g: GridData): Float32Array {
  const bin = atob(g.base64);
  if (bin.length !== g.rows * g.width) throw new Error(`grid of ${bin.length} bytes, expected ${g.rows * g.width}`);
  const out = new Float32Array(bin.length);
  for (let i = 0; i < bin.length; i++) {
    const v = bin.charCodeAt(i);
    out[i] = g.signed ? (v << 24) >> 24 : v;
  }
  return out;
}

const cache = new Map<GridData, Float32Array>();

/** A grid as row-major float values (row i at i·width), decoded on first use. */
function grid(g: GridData): Float32Array {
  let v = cache.get(g);
  if (!v) cache.set(g, (v = decode(g)));
  return v;
}

export const iq2xxsGrid = (): Float32Array => grid(IQ2XXS_GRID);
export const iq2xsGrid = (): Float32Array => grid(IQ2XS_GRID);
export const iq2sGrid = (): Float32Array => grid(IQ2S_GRID);
export const iq3xxsGrid = (): Float32Array => grid(IQ3XXS_GRID);
export const iq3sGrid = (): Float32Array => grid(IQ3S_GRID);
export const iq1sGrid = (): Float32Array => grid(IQ1S_GRID);

/** ksigns_iq2xs[i]: the 7 sign bits i plus an 8th that makes the count of set bits even. */
export const KSIGNS: Uint8Array = (() => {
  const t = new Uint8Array(128);
  for (let i = 0; i < 128; i++) {
    let p = 0;
    for (let v = i; v; v >>= 1) p ^= v & 1;
    t[i] = i | (p ? 0x80 : 0);
  }
  return t;
})();
