import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { foldName } from '../src/torch/zip-names.ts';

/** miniz's lookup as a plain loop: each byte a char, ASCII A–Z lowered, nothing else touched. */
function folded(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b >= 0x41 && b <= 0x5a ? b + 0x20 : b);
  return s;
}

describe('foldName', () => {
  it('is the byte-per-char ASCII lowering, for any bytes and lengths past one 4096-byte run', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 9000 }), (bytes) => {
        const copy = bytes.slice();
        expect(foldName(bytes)).toBe(folded(bytes));
        // the name bytes are a view of the ZIP directory: never written to
        expect(bytes).toEqual(copy);
      }),
      { numRuns: 300 },
    );
    expect(foldName(new TextEncoder().encode('Archive/DATA.PKL'))).toBe('archive/data.pkl');
    expect(foldName(new Uint8Array([0xc4, 0x5a, 0x5b, 0x40]))).toBe('\u00c4z[@');
  });
});
