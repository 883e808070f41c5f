/**
 * Worked examples of MLX's fp quantizers, one per place where its GPU kernel and CPU op graph
 * part ways (values reasoned out by hand from the kernel text; see docs/formats/mlx.md).
 */
import { describe, expect, it } from 'vitest';
import { dequantizeFp, quantizeFp, unpackCodes, type FloatDType, type FpMode } from '../src/index.ts';

function q(mode: FpMode, values: number[], variant: 'gpu' | 'cpu', dtype: FloatDType = 'F32', globalScale?: number) {
  const gs = mode === 'nvfp4' ? 16 : 32;
  const w = [...values, ...new Array(gs - values.length).fill(0)];
  const r = quantizeFp(w, gs, { mode, variant, dtype, ...(globalScale === undefined ? {} : { globalScale }) });
  return { byte: r.scales[0], codes: Array.from(unpackCodes(r.words, mode === 'mxfp8' ? 8 : 4, gs)) };
}

describe('mxfp4', () => {
  it('ties: gpu rounds to even (0.75 → 1, 1.75 → 2, 3.5 → 4), cpu argmin to the lower magnitude', () => {
    // amax 6 gives scale 2^0 (byte 127) on both paths, so elements are used as they are.
    const values = [6, 0.75, 1.75, 3.5, 0.25, 2.5, 5, -0.75];
    const gpu = q('mxfp4', values, 'gpu');
    const cpu = q('mxfp4', values, 'cpu');
    expect([gpu.byte, cpu.byte]).toEqual([127, 127]);
    expect(gpu.codes.slice(0, 8)).toEqual([7, 2, 4, 6, 0, 4, 6, 10]);
    expect(cpu.codes.slice(0, 8)).toEqual([7, 1, 3, 5, 0, 4, 6, 9]);
  });

  it('signed zero: a small negative is code 8 (−0) on the gpu, 0 on the cpu', () => {
    expect(q('mxfp4', [6, -0.1, -0], 'gpu').codes.slice(0, 3)).toEqual([7, 8, 8]);
    expect(q('mxfp4', [6, -0.1, -0], 'cpu').codes.slice(0, 3)).toEqual([7, 0, 0]);
  });

  it('an all-zero group: byte 0 on the gpu (log2 0 = −Inf, clamped), 127 on the cpu (where(s == 0, 0))', () => {
    expect(q('mxfp4', [], 'gpu').byte).toBe(0);
    expect(q('mxfp4', [], 'cpu').byte).toBe(127);
  });

  it('a denormal group: the cpu scale byte wraps below 2^−127, the gpu clamps to byte 0', () => {
    // amax = 6 · 2^−140 (an f32 subnormal): log2(amax / 6) = −140 → −140 + 127 = −13 → 243.
    const tiny = 6 * 2 ** -140;
    expect(q('mxfp4', [tiny], 'cpu')).toMatchObject({ byte: 243, codes: [7, ...new Array(31).fill(0)] });
    expect(q('mxfp4', [tiny], 'gpu').byte).toBe(0);
  });

  it('saturation: the rounded exponent can leave elements above 6, which become 6', () => {
    // amax / 6 = 1.41 < √2, so the exponent rounds to 0 and 8.46 saturates.
    expect(q('mxfp4', [6 * 1.41, -6 * 1.41], 'gpu')).toMatchObject({ byte: 127, codes: [7, 15, ...new Array(30).fill(0)] });
    expect(q('mxfp4', [6 * 1.41, -6 * 1.41], 'cpu')).toMatchObject({ byte: 127, codes: [7, 15, ...new Array(30).fill(0)] });
  });

  it('cpu F16: log2 is rounded to F16 and then rint, gpu rounds the f32 log2 half away', () => {
    // amax / 6 = 0.00068903 (F16), log2 = −10.5031: F16 makes it −10.5, rint gives −10 (byte 117);
    // the gpu rounds −10.5028 to −11 (byte 116).
    expect(q('mxfp4', [0.0041351318359375], 'cpu', 'F16').byte).toBe(117);
    expect(q('mxfp4', [0.0041351318359375], 'gpu', 'F16').byte).toBe(116);
  });
});

describe('mxfp8', () => {
  it('E4M3 ties to even and saturation at 448 on both paths', () => {
    // 1.0625 lies halfway between 1 (0x38) and 1.125 (0x39); 1.1875 between 0x39 and 1.25 (0x3a).
    for (const v of ['gpu', 'cpu'] as const) {
      const r = q('mxfp8', [448, 1.0625, 1.1875, -1.0625], v);
      expect(r.byte).toBe(127);
      expect(r.codes.slice(0, 4)).toEqual([0x7e, 0x38, 0x3a, 0xb8]);
      expect(q('mxfp8', [448 * 1.41], v).codes[0]).toBe(0x7e);
    }
  });
});

describe('nvfp4', () => {
  it('a scale that rounds to E4M3 zero: gpu multiplies by 0 (negatives give −0, code 8), cpu divides by 0 (±Inf → code 0)', () => {
    const w = [-1e-5, 1e-5, -2e-5];
    expect(q('nvfp4', w, 'gpu')).toMatchObject({ byte: 0, codes: [8, 0, 8, ...new Array(13).fill(0)] });
    expect(q('nvfp4', w, 'cpu')).toMatchObject({ byte: 0, codes: new Array(16).fill(0) });
  });

  it('scales saturate at 448 (0x7E); elements are then taken against 448', () => {
    // amax / 6 = 1666.7 saturates; 1e4 / 448 = 22.3 → 6, 1000 / 448 = 2.23 → 2, −1500 / 448 = −3.35 → −3.
    for (const v of ['gpu', 'cpu'] as const) {
      const r = q('nvfp4', [1e4, 1000, -1500], v);
      expect(r.byte).toBe(0x7e);
      expect(r.codes.slice(0, 3)).toEqual([7, 4, 13]);
    }
  });

  it('a global scale enters as 2688 / g on the way in and g / 2688 on the way out', () => {
    const w = Array.from({ length: 16 }, (_, i) => (i - 8) / 4);
    for (const v of ['gpu', 'cpu'] as const) {
      const r = quantizeFp(w, 16, { mode: 'nvfp4', variant: v, globalScale: 2688 });
      const back = dequantizeFp(r.words, r.scales, { mode: 'nvfp4', dtype: 'F32', globalScale: 2688, variant: v });
      // g = 2688 makes enc 1: amax 2 → scale 2/6 in E4M3 (0.3125 ≈ 0x2d) and back ≈ w.
      for (let i = 0; i < 16; i++) expect(Math.abs(back[i]! - w[i]!)).toBeLessThanOrEqual(0.35);
    }
  });
});

describe('E4M3 encoding', () => {
  // Brute force: the nearest of the finite values up to 448, ties to the even code, ≥ 464 saturating.
  const finite = Array.from({ length: 0x7f }, (_, b) => ({ b, v: b === 0 ? 0 : (b >> 3 === 0 ? (b & 7) * 2 ** -9 : (8 + (b & 7)) * 2 ** ((b >> 3) - 10)) }));
  function brute(x: number): number {
    const a = Math.abs(x);
    const sign = x < 0 || Object.is(x, -0) ? 0x80 : 0;
    if (!(a < 464)) return sign | 0x7e;
    let best = finite[0]!;
    for (const c of finite) {
      const d = Math.abs(a - c.v) - Math.abs(a - best.v);
      if (d < 0 || (d === 0 && (c.b & 1) === 0)) best = c;
    }
    return sign | best.b;
  }
  it('matches a brute-force nearest-even search on every value, midpoint and 20 000 random f32 values', async () => {
    const { numberToE4m3 } = await import('../src/index.ts');
    const xs: number[] = [];
    for (let i = 0; i < finite.length; i++) {
      xs.push(finite[i]!.v, -finite[i]!.v);
      if (i + 1 < finite.length) xs.push((finite[i]!.v + finite[i + 1]!.v) / 2);
    }
    xs.push(448, 455.9, 463.99, 464, 1e9, Infinity, -Infinity, 2 ** -10, 2 ** -11, 3 * 2 ** -11);
    let s = 1;
    for (let i = 0; i < 20000; i++) {
      s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
      xs.push(Math.fround((s / 2 ** 32 - 0.5) * 2 ** ((i % 24) - 12)));
    }
    for (const x of xs) expect(numberToE4m3(x), String(x)).toBe(brute(Math.fround(x)));
  });
});
