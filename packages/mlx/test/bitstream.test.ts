import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { packCodes, unpackCodes } from '../src/index.ts';

/** Bit p of the stream, read straight from the (little-endian host) bytes of the words. */
function streamBit(bytes: Uint8Array, p: number): number {
  return (bytes[p >> 3]! >> (p & 7)) & 1;
}

describe('LSB-first bit stream', () => {
  for (const bits of [1, 2, 3, 4, 5, 6, 8]) {
    for (const gs of [32, 64, 128]) {
      it(`${bits} bits, group ${gs}: pack → unpack is exact on random codes, odd rows and leading dims`, () => {
        fc.assert(
          fc.property(
            fc.integer({ min: 1, max: 3 }), // experts
            fc.integer({ min: 1, max: 7 }).map((r) => r * 2 - 1), // odd row counts
            fc.integer({ min: 1, max: 3 }), // groups per row
            fc.integer({ min: 0, max: 2 ** 31 }),
            (experts, rows, groups, seed) => {
              const n = experts * rows * groups * gs;
              let s = seed;
              const codes = Uint8Array.from({ length: n }, () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) >>> 16) & ((1 << bits) - 1));
              const words = packCodes(codes, bits);
              expect(words.length).toBe((n * bits) / 32);
              expect(unpackCodes(words, bits, n)).toEqual(codes);
              // Every code sits at stream bits [i*bits, (i+1)*bits), LSB first.
              const bytes = new Uint8Array(words.buffer, words.byteOffset, words.byteLength);
              const fromBits = Array.from({ length: n }, (_, i) => {
                let v = 0;
                for (let k = 0; k < bits; k++) v |= streamBit(bytes, i * bits + k) << k;
                return v;
              });
              expect(fromBits).toEqual(Array.from(codes));
            },
          ),
          { numRuns: 25 },
        );
      });
    }
  }

  it('refuses streams that do not end on a word boundary and widths beyond 8', () => {
    expect(() => packCodes(new Uint8Array(10), 3)).toThrow(expect.objectContaining({ code: 'MlxInvalidQuantization' }));
    expect(() => unpackCodes(new Uint32Array(4), 9, 32)).toThrow(expect.objectContaining({ code: 'MlxUnsupportedQuantization' }));
    expect(() => unpackCodes(new Uint32Array(2), 4, 32)).toThrow(RangeError);
  });
});
