import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bf16BitsToF32, f16BitsToF32, f32BitsToBf16, f32BitsToF16 } from '@tensorport/core';
import { affineScalesBiases, decodeFloats, dequantizeAffine, encodeFloats, quantizeAffine, roundTo, type AffineVariant, type FloatDType } from '../src/index.ts';
import { BF16_SPLIT, F16_SPLIT, splitRound } from '../src/float.ts';
import { groupRange } from '../src/group-range.ts';
import { castRef, referenceQuantize } from './helpers/reference.ts';

const view = new DataView(new ArrayBuffer(4));
const fromBits = (b: number): number => (view.setUint32(0, b >>> 0), view.getFloat32(0));
const bitsOf = (x: number): number => (view.setFloat32(0, x), view.getUint32(0));
/** The exact conversions there and back (core's bit-level ones), as a value. */
const exactF16 = (x: number): number => fromBits(f16BitsToF32(f32BitsToF16(bitsOf(x))));
const exactBf16 = (x: number): number => fromBits(bf16BitsToF32(f32BitsToBf16(bitsOf(x))));

/** Same value, the sign of zero included; any NaN matches any NaN. */
function same(got: number, want: number): boolean {
  return Object.is(got, want) || (Number.isNaN(got) && Number.isNaN(want));
}

/** f32 bit patterns at, next to and between the rounding ties of a p-bit format, for every exponent in [lo, hi]. */
function nearTies(lo: number, hi: number, dropped: number): number[] {
  const half = 1 << (dropped - 1);
  const out: number[] = [];
  for (let e = lo; e <= hi; e++) {
    for (const top of [0, 1, 2, 3, (1 << (23 - dropped)) - 2, (1 << (23 - dropped)) - 1]) {
      for (const low of [0, 1, half - 1, half, half + 1, 2 * half - 1]) out.push((e << 23) | (top << dropped) | low);
    }
  }
  return out;
}

describe('splitRound: rounding to F16 / BF16 without a memory round trip', () => {
  // The exhaustive check (every f32 of the domain: 5·10^8 for F16, 2·10^9 for BF16) takes minutes;
  // here every exponent near its ties, and random patterns over the whole domain.
  const domains = [
    { name: 'F16', split: F16_SPLIT, exact: exactF16, lo: 113, hi: 142, dropped: 13, first: 0x38800000, end: 0x477ff000 },
    { name: 'BF16', split: BF16_SPLIT, exact: exactBf16, lo: 1, hi: 254, dropped: 16, first: 0x00800000, end: 0x7f7f8000 },
  ];
  for (const d of domains) {
    it(`${d.name}: the exact conversion's value near every tie of every exponent, both signs`, () => {
      let checked = 0;
      for (const b of nearTies(d.lo, d.hi, d.dropped)) {
        if (b < d.first || b >= d.end) continue;
        for (const sign of [0, 0x80000000]) {
          const x = fromBits((b | sign) >>> 0);
          const got = splitRound(x, d.split);
          if (!same(got, d.exact(x))) expect({ bits: (b | sign) >>> 0, got }).toEqual({ bits: (b | sign) >>> 0, got: d.exact(x) });
          checked++;
        }
      }
      expect(checked).toBeGreaterThan(1000);
    });

    it(`${d.name}: the exact conversion's value for random f32 in the domain`, () => {
      fc.assert(
        fc.property(fc.integer({ min: d.first, max: d.end - 1 }), fc.boolean(), (b, negative) => {
          const x = fromBits(negative ? (b | 0x80000000) >>> 0 : b);
          expect(splitRound(x, d.split)).toBe(d.exact(x));
        }),
        { numRuns: 20000 },
      );
    });
  }

  it('every F16 and BF16 value (subnormals included) comes back unchanged', () => {
    const changed: number[] = [];
    let finite = 0;
    for (let h = 0; h < 0x10000; h++) {
      const f16 = fromBits(f16BitsToF32(h));
      const bf16 = fromBits(bf16BitsToF32(h));
      if (Number.isFinite(f16)) finite++;
      if (Number.isFinite(f16) && !same(splitRound(f16, F16_SPLIT), f16)) changed.push(h);
      if (Number.isFinite(bf16) && !same(splitRound(bf16, BF16_SPLIT), bf16)) changed.push(h);
    }
    expect(finite).toBe(0x10000 - 2 * 1024);
    expect(changed).toEqual([]);
  });
});

describe('roundTo, encodeFloats and decodeFloats against the exact conversions', () => {
  // Any 32-bit pattern: subnormals of both sizes, ties, overflow to Inf, NaN payloads.
  const arbBits = fc.oneof(
    fc.integer({ min: 0, max: 0xffffffff }),
    fc.constantFrom(...nearTies(100, 145, 13), ...nearTies(0, 3, 16), ...nearTies(250, 255, 16)).chain((b) => fc.constantFrom(b >>> 0, (b | 0x80000000) >>> 0)),
  );

  it('roundTo(F16 / BF16) is the value of the exact conversion', () => {
    fc.assert(
      fc.property(arbBits, (b) => {
        const x = fromBits(b);
        expect(same(roundTo('F16', x), exactF16(x))).toBe(true);
        expect(same(roundTo('BF16', x), exactBf16(x))).toBe(true);
      }),
      { numRuns: 20000 },
    );
  });

  it('encodeFloats writes the exact conversion of every f32 pattern, NaN payloads included', () => {
    fc.assert(
      fc.property(fc.array(arbBits, { minLength: 1, maxLength: 64 }), (bits) => {
        const values = new Float32Array(new Uint32Array(bits).buffer);
        for (const dtype of ['F16', 'BF16'] as const) {
          const got = new Uint16Array(encodeFloats(values, dtype).buffer);
          const want = bits.map((b) => (dtype === 'F16' ? f32BitsToF16(b) : f32BitsToBf16(b)));
          expect(Array.from(got)).toEqual(want);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('decodeFloats widens runs of any length at any offset (the unrolled loops and their tails)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 23 }), fc.integer({ min: 0, max: 3 }), fc.constantFrom<FloatDType>('F16', 'BF16'), (halves, offset, dtype) => {
        const buf = new Uint8Array(offset + halves.length * 2);
        halves.forEach((h, i) => {
          buf[offset + 2 * i] = h & 0xff;
          buf[offset + 2 * i + 1] = h >>> 8;
        });
        const got = new Uint32Array(decodeFloats(buf.subarray(offset), dtype).buffer);
        expect(Array.from(got)).toEqual(halves.map((h) => (dtype === 'F16' ? f16BitsToF32(h) : (h << 16) >>> 0)));
      }),
      { numRuns: 2000 },
    );
  });

  it('decodeFloats widens every 16-bit pattern exactly', () => {
    const all = new Uint8Array(new Uint16Array(0x10000).map((_, i) => i).buffer);
    for (const dtype of ['F16', 'BF16'] as const) {
      const got = new Uint32Array(decodeFloats(all, dtype).buffer);
      for (let h = 0; h < 0x10000; h++) {
        // BF16 is the high half as it stands (as numpy's `<< 16`: a signalling NaN stays one).
        const want = dtype === 'F16' ? f16BitsToF32(h) : (h << 16) >>> 0;
        if (got[h] !== want) expect({ h, got: got[h] }).toEqual({ h, got: want });
      }
    }
  });
});

/** castRef, which searches finite values, with NaN passed through. */
const cast = (dt: FloatDType, x: number): number => (Number.isNaN(x) ? NaN : castRef(dt, x));

describe('dequantizeAffine for every kind of scale and bias', () => {
  // Scales and biases of any bit pattern (subnormal, near the largest finite value so that some
  // outputs overflow, ±Inf, NaN): every group either takes the splitting path or is sent to the
  // rounding through memory, and both must give T(T(q·s) + b), checked with castRef.
  const arbHalf = fc.oneof(fc.integer({ min: 0, max: 0xffff }), fc.constantFrom(0x0000, 0x8000, 0x0001, 0x03ff, 0x0400, 0x7bff, 0xfbff, 0x7c00, 0x7e00, 0x7f7f, 0xff7f, 0x7f80, 0x5bff, 0x5c00));
  it('matches the independent casts elementwise', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(4, 5, 6, 8),
        fc.constantFrom(32, 64),
        fc.constantFrom<FloatDType>('F16', 'BF16'),
        fc.array(fc.tuple(arbHalf, arbHalf), { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 0, max: 2 ** 31 }),
        (bits, groupSize, dtype, pairs, seed) => {
          const widen = (h: number) => fromBits(dtype === 'F16' ? f16BitsToF32(h) : bf16BitsToF32(h));
          const scales = new Float32Array(pairs.map(([s]) => widen(s)));
          const biases = new Float32Array(pairs.map(([, b]) => widen(b)));
          const count = pairs.length * groupSize;
          let x = seed;
          // Codes 0 and 2^bits − 1 often, to reach zero products and the largest ones.
          const codes = Array.from({ length: count }, () => {
            x = (Math.imul(x, 69069) + 1) >>> 0;
            const r = x >>> 24;
            return r < 32 ? 0 : r < 64 ? 2 ** bits - 1 : (x >>> 8) % 2 ** bits;
          });
          const words = new Uint32Array((count * bits) / 32);
          codes.forEach((c, i) => {
            for (let k = 0; k < bits; k++) if ((c >> k) & 1) words[(i * bits + k) >> 5]! |= 1 << ((i * bits + k) & 31);
          });
          const got = dequantizeAffine(words, scales, biases, { bits, groupSize, dtype });
          for (let j = 0; j < count; j++) {
            const g = Math.floor(j / groupSize);
            const want = cast(dtype, cast(dtype, codes[j]! * scales[g]!) + biases[g]!);
            if (!same(got[j]!, want)) expect({ j, s: scales[g], b: biases[g], c: codes[j], got: got[j] }).toEqual({ j, s: scales[g], b: biases[g], c: codes[j], got: want });
          }
        },
      ),
      { numRuns: 400 },
    );
  });
});

describe('groupRange: branch-free min and max', () => {
  const arbValue = fc.oneof(
    fc.float({ noNaN: true, noDefaultInfinity: true }),
    fc.constantFrom(0, -0, 1e-40, -1e-40, 3.4e38, -3.4e38, 2 ** -149),
  );
  it('gives Math.min / Math.max of 16-bit-exact groups and refuses odd F32 groups, NaN and ±Infinity', () => {
    fc.assert(
      fc.property(
        fc.array(arbValue, { minLength: 32, maxLength: 32 }),
        fc.constantFrom<FloatDType>('F32', 'F16', 'BF16'),
        fc.boolean(),
        fc.constantFrom(null, NaN, Infinity, -Infinity),
        fc.integer({ min: 0, max: 31 }),
        (raw, dtype, fromZero, poison, at) => {
          const values = new Float32Array(raw.map((v) => castRef(dtype, v)));
          if (poison !== null) values[at] = poison;
          const bits = new Int32Array(values.buffer);
          const out = new Float64Array(2);
          const ok = groupRange(bits, 0, 32, fromZero, out);
          const odd = bits.some((b) => (b & 1) !== 0);
          if (!values.every(Number.isFinite) || odd) {
            expect(ok).toBe(false);
            return;
          }
          expect(ok).toBe(true);
          const max = Math.max(...values, fromZero ? 0 : -Infinity);
          // Zeros may come back with either sign (see affine.ts).
          expect(out[0]! === Math.min(...values)).toBe(true);
          expect(out[1]! === max).toBe(true);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('quantizeAffine and affineScalesBiases on Float32Array input still match the independent transcription', () => {
    fc.assert(
      fc.property(
        fc.array(fc.float({ min: -4, max: 4, noNaN: true }), { minLength: 64, maxLength: 64 }),
        fc.constantFrom<FloatDType>('F32', 'F16', 'BF16'),
        fc.constantFrom(3, 4, 8),
        fc.constantFrom<AffineVariant>('gpu', 'cpu'),
        fc.integer({ min: -20, max: 10 }),
        (raw, dtype, bits, variant, e) => {
          const w = raw.map((v) => castRef(dtype, v * 2 ** e));
          const ref = referenceQuantize(w, 32, bits, variant, dtype);
          const x = new Float32Array(w);
          const got = quantizeAffine(x, 64, { bits, groupSize: 32, variant, dtype });
          expect(Array.from(got.words)).toEqual(ref.words);
          expect(Array.from(got.scales)).toEqual(ref.scales);
          expect(Array.from(got.biases)).toEqual(ref.biases);
          const only = affineScalesBiases(x, 64, { bits, groupSize: 32, variant, dtype });
          expect(Array.from(only.scales)).toEqual(ref.scales);
        },
      ),
      { numRuns: 1000 },
    );
  });
});
