import { describe, expect, it } from 'vitest';
import { affineScalesBiases, quantizeAffine, type AffineVariant, type FloatDType } from '../src/index.ts';
import { castRef, referenceQuantize } from './helpers/reference.ts';
import { normal, rng } from './helpers/random.ts';

type Scenario = (r: () => number, dt: FloatDType, n: number) => number[];

/** Weight generators covering what the kernels branch on; values are made representable in dt. */
const SCENARIOS: Record<string, Scenario> = {
  normal: (r, _dt, n) => Array.from({ length: n }, () => normal(r) * 0.05),
  // Multiples of 1/16 in a small range: (v - b) / s hits exact halves often.
  ties: (r, _dt, n) => Array.from({ length: n }, () => Math.floor(r() * 33 - 16) / 16),
  linspaceTies: (_r, _dt, n) => Array.from({ length: n }, (_, i) => -0.9 + (i % 32) * (1.4 / 31)),
  allNegative: (r, _dt, n) => Array.from({ length: n }, () => -1 - r() * 0.31),
  allPositive: (r, _dt, n) => Array.from({ length: n }, () => 3 + r()),
  allZero: (_r, _dt, n) => new Array<number>(n).fill(0),
  mixedZeroGroups: (r, _dt, n) => Array.from({ length: n }, (_, i) => (Math.floor(i / 32) % 2 === 0 ? 0 : normal(r))),
  denormals: (r, dt, n) => {
    const tiny = dt === 'F16' ? 2 ** -20 : 2 ** -130;
    return Array.from({ length: n }, () => Math.round(normal(r) * 8) * tiny);
  },
  largeRange: (r, dt, n) => {
    const big = dt === 'F16' ? 30000 : 1e30;
    return Array.from({ length: n }, () => (r() * 2 - 1) * big);
  },
  narrowAroundLarge: (r, dt, n) => {
    const c = dt === 'F16' ? 1000 : 1e6;
    return Array.from({ length: n }, () => c + r() * (dt === 'F32' ? 0.5 : 8));
  },
  singleOutlier: (r, _dt, n) => Array.from({ length: n }, (_, i) => (i % 64 === 5 ? 40 : normal(r) * 0.01)),
};

const BITS = [2, 3, 4, 5, 6, 8];
const GROUPS = [32, 64, 128];
const DTYPES: FloatDType[] = ['F32', 'F16', 'BF16'];
const VARIANTS: AffineVariant[] = ['gpu', 'cpu'];

describe('quantizeAffine matches an independent transcription of the kernels', () => {
  for (const [name, gen] of Object.entries(SCENARIOS)) {
    it(`${name}: every bits × group size × dtype × variant`, () => {
      let seed = 1;
      let compared = 0;
      for (const dt of DTYPES) {
        for (const bits of BITS) {
          for (const gs of GROUPS) {
            const cols = 256;
            const rows = 3;
            const w = gen(rng(seed++), dt, rows * cols).map((v) => castRef(dt, v));
            for (const variant of VARIANTS) {
              const ref = referenceQuantize(w, gs, bits, variant, dt);
              const got = quantizeAffine(w, cols, { bits, groupSize: gs, variant, dtype: dt });
              expect(Array.from(got.words), `${dt} ${bits}b gs${gs} ${variant}`).toEqual(ref.words);
              expect(Array.from(got.scales)).toEqual(ref.scales);
              expect(Array.from(got.biases)).toEqual(ref.biases);
              const only = affineScalesBiases(w, cols, { bits, groupSize: gs, variant, dtype: dt });
              expect(Array.from(only.scales)).toEqual(ref.scales);
              expect(Array.from(only.biases)).toEqual(ref.biases);
              compared++;
            }
          }
        }
      }
      expect(compared).toBe(DTYPES.length * BITS.length * GROUPS.length * VARIANTS.length);
    });
  }

  it('the variants really differ on ties and on all-negative groups', () => {
    const ties = SCENARIOS.linspaceTies!(rng(0), 'BF16', 32).map((v) => castRef('BF16', v));
    const gpu = quantizeAffine(ties, 32, { bits: 4, groupSize: 32, variant: 'gpu', dtype: 'BF16' });
    const cpu = quantizeAffine(ties, 32, { bits: 4, groupSize: 32, variant: 'cpu', dtype: 'BF16' });
    expect(Array.from(gpu.words)).not.toEqual(Array.from(cpu.words));
    const neg = SCENARIOS.allNegative!(rng(3), 'F32', 64).map(Math.fround);
    const g2 = quantizeAffine(neg, 64, { bits: 4, groupSize: 64, variant: 'gpu' });
    const c2 = quantizeAffine(neg, 64, { bits: 4, groupSize: 64, variant: 'cpu' });
    expect(g2.scales[0]).toBeGreaterThan(c2.scales[0]! * 3);
  });

  it('the stored bf16 scale is rounded after the codes are computed with the f32 scale', () => {
    // Find a group where rounding the scale first would change a code, then check which one we use.
    const r = rng(11);
    let found = 0;
    for (let trial = 0; trial < 400 && found < 5; trial++) {
      const w = Array.from({ length: 64 }, () => castRef('BF16', normal(r)));
      const ref = referenceQuantize(w, 64, 8, 'gpu', 'BF16');
      const s32 = ref.scalesF32[0]!;
      const sT = ref.scales[0]!;
      const b = ref.biases[0]!;
      const withRounded = w.map((v) => Math.min(255, Math.max(0, Math.sign(Math.fround(Math.fround(v - b) / sT)) * Math.floor(Math.abs(Math.fround(Math.fround(v - b) / sT)) + 0.5))));
      if (s32 !== sT && withRounded.some((q, i) => q !== ref.codes[i])) {
        found++;
        const got = quantizeAffine(w, 64, { bits: 8, groupSize: 64, dtype: 'BF16' });
        expect(Array.from(got.words)).toEqual(ref.words);
      }
    }
    expect(found).toBeGreaterThan(0);
  });

  it('refuses NaN and infinities with a typed error', () => {
    for (const bad of [NaN, Infinity, -Infinity]) {
      const w = new Array<number>(32).fill(0.5);
      w[7] = bad;
      expect(() => quantizeAffine(w, 32, { bits: 4, groupSize: 32 })).toThrow(expect.objectContaining({ code: 'MlxNonFiniteWeight' }));
    }
  });

  it('refuses a group whose f32 scale would overflow', () => {
    const w = new Array<number>(32).fill(Math.fround(3e38));
    expect(() => quantizeAffine(w, 32, { bits: 4, groupSize: 32, variant: 'cpu' })).toThrow(expect.objectContaining({ code: 'MlxNonFiniteWeight' }));
  });

  it('refuses unsupported bits, group sizes and ragged rows', () => {
    const w = new Array<number>(128).fill(1);
    expect(() => quantizeAffine(w, 128, { bits: 7, groupSize: 32 })).toThrow(expect.objectContaining({ code: 'MlxUnsupportedQuantization' }));
    expect(() => quantizeAffine(w, 128, { bits: 4, groupSize: 16 })).toThrow(expect.objectContaining({ code: 'MlxUnsupportedQuantization' }));
    expect(() => quantizeAffine(w, 96, { bits: 4, groupSize: 64 })).toThrow(expect.objectContaining({ code: 'MlxInvalidQuantization' }));
  });
});
