import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bf16BitsToF32, f16BitsToF32 } from '@tensorport/core';
import { code, exactCode, NEAR_HALF, RINT } from '../src/affine-codes.ts';
import { roundF32 } from '../src/affine.ts';
import { roundHalfAway, roundHalfEven } from '../src/float.ts';
import { affineGroup, quantizeAffine, type AffineVariant, type FloatDType } from '../src/index.ts';
import { castRef, referenceQuantize } from './helpers/reference.ts';

const f = Math.fround;
const BINS = [3, 7, 15, 31, 63, 255];

/** The fast path's code against the exact one, for one value; only meaningful where exactCode is (|quotient| < 2^31). */
function agree(v: number, bias: number, scale: number, gpu: boolean, nBins: number): void {
  const q = Math.abs(f(f(v - bias) / scale));
  if (!(q < 2 ** 31)) return;
  const want = exactCode(v, bias, scale, gpu, RINT, nBins);
  const got = code(v, bias, 1 / scale, scale, gpu, RINT, NEAR_HALF, nBins);
  if (got !== want) expect({ v, bias, scale, gpu, nBins, got }).toEqual({ v, bias, scale, gpu, nBins, got: want });
}

describe('code: the division-free fast path gives exactCode', () => {
  const finite = fc.float({ noNaN: true, noDefaultInfinity: true });
  const nonzero = finite.filter((s) => s !== 0);

  it('for any f32 value, bias and scale', () => {
    fc.assert(
      fc.property(finite, finite, nonzero, fc.boolean(), fc.constantFrom(...BINS), (v, bias, scale, gpu, nBins) => agree(v, bias, scale, gpu, nBins)),
      { numRuns: 20000 },
    );
  });

  it('at, next to and between half-integer quotients (where rounding rules and f32 rounding decide)', () => {
    fc.assert(
      fc.property(
        fc.float({ min: f(-4), max: f(4), noNaN: true }),
        fc.float({ min: f(2 ** -20), max: f(4), noNaN: true }),
        fc.boolean(),
        fc.integer({ min: -1, max: 600 }),
        fc.integer({ min: -40, max: 40 }),
        fc.boolean(),
        fc.constantFrom(...BINS),
        (bias, magnitude, negative, k, ulps, gpu, nBins) => {
          const scale = negative ? -magnitude : magnitude;
          // A value whose quotient is k + 1/2, moved by a few f32 ulps either way.
          const v0 = f(bias + (k + 0.5) * scale);
          const view = new Float32Array([v0]);
          const bits = new Int32Array(view.buffer);
          bits[0] = bits[0]! + ulps;
          agree(view[0]!, bias, scale, gpu, nBins);
          agree(v0, bias, scale, gpu, nBins);
        },
      ),
      { numRuns: 20000 },
    );
  });

  it('for every value of groups whose scale and bias come from affineGroup', () => {
    const out = new Float64Array(2);
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 32, maxLength: 32 }),
        fc.constantFrom<FloatDType>('F16', 'BF16'),
        fc.constantFrom<AffineVariant>('gpu', 'cpu'),
        fc.constantFrom(2, 3, 4, 5, 6, 8),
        (halves, dtype, variant, bits) => {
          // Any 16-bit patterns as weights of that dtype, the non-finite ones replaced by 0.
          const widened = new Float32Array(new Uint32Array(halves.map((h) => (dtype === 'F16' ? f16BitsToF32(h) : bf16BitsToF32(h)))).buffer);
          const w = widened.map((v) => (Number.isFinite(v) ? v : 0));
          affineGroup(w, 0, 32, bits, variant, out);
          for (const v of w) agree(v, out[1]!, out[0]!, variant === 'gpu', (1 << bits) - 1);
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('quantizeAffine with the fast path still matches the independent transcription', () => {
  it('on groups built around exact ties and near-ties of every width', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(2, 3, 4, 5, 6, 8),
        fc.constantFrom(32, 64, 128),
        fc.constantFrom<FloatDType>('F32', 'F16', 'BF16'),
        fc.constantFrom<AffineVariant>('gpu', 'cpu'),
        fc.float({ min: f(-2), max: f(2), noNaN: true }),
        fc.float({ min: f(2 ** -10), max: f(1), noNaN: true }),
        fc.array(fc.tuple(fc.integer({ min: -2, max: 300 }), fc.integer({ min: -3, max: 3 })), { minLength: 128, maxLength: 128 }),
        (bits, gs, dtype, variant, lo, step, picks) => {
          // Values on a grid of half steps from `lo` (so quotients land on and next to halves), a
          // few ulps off now and then, cast to the dtype.
          const nBins = (1 << bits) - 1;
          const w = picks.slice(0, gs).map(([k, d]) => castRef(dtype, lo + ((k % (2 * nBins + 2)) / 2) * step * (1 + d * 2 ** -23)));
          const ref = referenceQuantize(w, gs, bits, variant, dtype);
          const got = quantizeAffine(new Float32Array(w), gs, { bits, groupSize: gs, variant, dtype });
          expect(Array.from(got.words)).toEqual(ref.words);
          expect(Array.from(got.scales)).toEqual(ref.scales);
          expect(Array.from(got.biases)).toEqual(ref.biases);
        },
      ),
      { numRuns: 1500 },
    );
  });
});

describe('roundF32: the scale fit\'s rounding', () => {
  it('is roundHalfAway (gpu) and roundHalfEven (cpu) for every kind of f32, up to the sign of zero', () => {
    const halves = fc.integer({ min: -(2 ** 24), max: 2 ** 24 }).map((k) => f(k + 0.5));
    fc.assert(
      fc.property(fc.oneof(fc.float(), halves, fc.constantFrom(0.5, -0.5, 1.5, -2.5, 2 ** 23 + 1, -(2 ** 24), 3.4e38, -3.4e38, Infinity, -Infinity, 1e-45)), (t) => {
        if (Number.isNaN(t)) return;
        expect(roundF32(t, true) === roundHalfAway(t)).toBe(true);
        expect(roundF32(t, false) === roundHalfEven(t)).toBe(true);
      }),
      { numRuns: 20000 },
    );
  });
});
