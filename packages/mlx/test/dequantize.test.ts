import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { affineGroup, dequantizeAffine, quantizeAffine, unpackCodes, type FloatDType } from '../src/index.ts';
import { castRef } from './helpers/reference.ts';

const MANTISSA: Record<FloatDType, number> = { F32: 23, F16: 10, BF16: 7 };
const MIN_EXP: Record<FloatDType, number> = { F32: -126, F16: -14, BF16: -126 };

/** One unit in the last place of the output dtype at magnitude |x| (subnormal spacing below). */
function ulp(dt: FloatDType, x: number): number {
  const e = Math.max(Math.floor(Math.log2(Math.abs(x) || Number.MIN_VALUE)), MIN_EXP[dt]);
  return 2 ** (e - MANTISSA[dt]);
}

const arbCase = fc
  .record({
    bits: fc.constantFrom(2, 3, 4, 5, 6, 8),
    groupSize: fc.constantFrom(32, 64, 128),
    dtype: fc.constantFrom<FloatDType>('F32', 'F16', 'BF16'),
    variant: fc.constantFrom('gpu' as const, 'cpu' as const),
    rows: fc.integer({ min: 1, max: 3 }),
    groups: fc.integer({ min: 1, max: 2 }),
    magnitude: fc.integer({ min: -12, max: 12 }),
    zeroGroup: fc.boolean(),
    seedValues: fc.array(fc.float({ min: -1, max: 1, noNaN: true }), { minLength: 16, maxLength: 16 }),
  })
  .map((c) => {
    const cols = c.groupSize * c.groups;
    const n = c.rows * cols;
    // Spread 16 random values (and their products) over the tensor: repeats make ties likely.
    const w = Array.from({ length: n }, (_, i) => castRef(c.dtype, c.seedValues[i % 16]! * c.seedValues[(i * 7) % 16]! * 2 ** c.magnitude));
    if (c.zeroGroup) w.fill(0, 0, c.groupSize);
    return { ...c, cols, w };
  });

describe('dequantize(quantize(w))', () => {
  it('error ≤ |scale|/2 (+ the scale cast and one output ulp); clipped top codes ≤ |scale|; zero groups exact', () => {
    fc.assert(
      fc.property(arbCase, ({ bits, groupSize, dtype, variant, cols, w }) => {
        const q = quantizeAffine(w, cols, { bits, groupSize, variant, dtype });
        const back = dequantizeAffine(q.words, q.scales, q.biases, { bits, groupSize, dtype });
        const codes = unpackCodes(q.words, bits, w.length);
        const sb = new Float64Array(2);
        const nBins = 2 ** bits - 1;
        for (let g = 0; g < q.scales.length; g++) {
          affineGroup(w, g * groupSize, groupSize, bits, variant, sb);
          const s32 = sb[0]!;
          const b = sb[1]!;
          const sT = q.scales[g]!;
          const allZero = w.slice(g * groupSize, (g + 1) * groupSize).every((v) => v === 0);
          for (let j = g * groupSize; j < (g + 1) * groupSize; j++) {
            if (allZero) {
              expect(back[j]).toBe(0);
              continue;
            }
            const t = (w[j]! - b) / s32; // where the element sits on the f32 grid, exactly
            const clipped = t > nBins + 0.5;
            const grid = clipped ? Math.abs(s32) : Math.abs(s32) / 2;
            // f32 rounding of (w - b) / s moves t by at most 2 ulps of n_bins.
            const quotient = Math.abs(s32) * nBins * 2 ** -22;
            const cast = codes[j]! * Math.abs(s32 - sT);
            const out = ulp(dtype, codes[j]! * sT) + ulp(dtype, back[j]!);
            expect(Math.abs(w[j]! - back[j]!)).toBeLessThanOrEqual(grid + quotient + cast + out);
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it("computes T(T(q·s) + b) in the scales' dtype T, then casts to the output dtype", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(2, 3, 4, 5, 6, 8),
        fc.constantFrom<FloatDType>('F32', 'F16', 'BF16'),
        fc.constantFrom<FloatDType>('F32', 'F16', 'BF16'),
        fc.array(fc.float({ noNaN: true, noDefaultInfinity: true, min: -1e4, max: 1e4 }), { minLength: 2, maxLength: 2 }),
        fc.integer({ min: 0, max: 2 ** 31 }),
        (bits, scaleDt, outDt, [s0, b0], seed) => {
          const s = castRef(scaleDt, s0!);
          const b = castRef(scaleDt, b0!);
          let x = seed;
          const codes = Array.from({ length: 32 }, () => ((x = (Math.imul(x, 69069) + 1) >>> 0) >>> 20) % 2 ** bits);
          const words = new Uint32Array(bits);
          codes.forEach((c, i) => {
            for (let k = 0; k < bits; k++) if ((c >> k) & 1) words[(i * bits + k) >> 5]! |= 1 << ((i * bits + k) & 31);
          });
          const got = dequantizeAffine(words, [s], [b], { bits, groupSize: 32, dtype: scaleDt, outDtype: outDt });
          const want = codes.map((c) => castRef(outDt, castRef(scaleDt, castRef(scaleDt, c * s) + b)));
          expect(Array.from(got)).toEqual(want);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('NaN and infinite scales in a file propagate as NaN / ±Inf, in every output dtype', () => {
    const words = new Uint32Array([0x76543210, 0xfedcba98, 0x76543210, 0xfedcba98]);
    for (const dtype of ['F32', 'F16', 'BF16'] as FloatDType[]) {
      const nan = dequantizeAffine(words, [NaN], [0], { bits: 4, groupSize: 32, dtype });
      expect(Array.from(nan).every(Number.isNaN)).toBe(true);
      const inf = dequantizeAffine(words, [Infinity], [1], { bits: 4, groupSize: 32, dtype });
      expect(Number.isNaN(inf[0])).toBe(true); // 0 · ∞
      expect(inf[1]).toBe(Infinity);
    }
  });

  it('negative scales dequantize the same way (scale · q + bias)', () => {
    const words = new Uint32Array([0x76543210, 0xfedcba98, 0x76543210, 0xfedcba98]);
    const got = dequantizeAffine(words, [-0.25], [1], { bits: 4, groupSize: 32, dtype: 'F32' });
    expect(Array.from(got)).toEqual(Array.from({ length: 32 }, (_, i) => 1 - 0.25 * (i % 16)));
  });
});
