import { describe, expect, it } from 'vitest';
import { dequantizeFp, e4m3ToNumber, e8m0ToNumber, FP4_VALUES, packCodes } from '../src/index.ts';

describe('mxfp4 / mxfp8 / nvfp4', () => {
  it('decodes E4M3 (FN) and E8M0', () => {
    expect(e4m3ToNumber(0x7e)).toBe(448);
    expect(e4m3ToNumber(0xfe)).toBe(-448);
    expect(e4m3ToNumber(0x38)).toBe(1);
    expect(e4m3ToNumber(0x08)).toBe(2 ** -6);
    expect(e4m3ToNumber(0x01)).toBe(2 ** -9);
    expect(e4m3ToNumber(0x7f)).toBeNaN();
    expect(e8m0ToNumber(127)).toBe(1);
    expect(e8m0ToNumber(0)).toBe(2 ** -127);
    expect(e8m0ToNumber(254)).toBe(2 ** 127);
    expect(e8m0ToNumber(255)).toBeNaN();
  });

  it('mxfp4: E2M1 nibbles LSB first times 2^(scale - 127)', () => {
    const codes = Array.from({ length: 32 }, (_, i) => i % 16);
    const words = packCodes(codes, 4);
    const out = dequantizeFp(words, Uint8Array.of(129), { mode: 'mxfp4', dtype: 'F32' });
    expect(Array.from(out)).toEqual(codes.map((c) => FP4_VALUES[c]! * 4));
    expect(FP4_VALUES.slice(0, 8)).toEqual([0, 0.5, 1, 1.5, 2, 3, 4, 6]);
  });

  it('mxfp8: element i is byte i, E4M3, default output BF16', () => {
    const bytes = Uint8Array.from({ length: 32 }, (_, i) => [0x38, 0xb8, 0x7e, 0x01][i % 4]!);
    const words = new Uint32Array(bytes.buffer);
    const out = dequantizeFp(words, Uint8Array.of(126), { mode: 'mxfp8' });
    expect(Array.from(out.slice(0, 4))).toEqual([0.5, -0.5, 224, 2 ** -10]);
  });

  it('nvfp4: groups of 16, E4M3 scale, optional global scale', () => {
    const codes = Array.from({ length: 32 }, (_, i) => (i < 16 ? 2 : 15));
    const words = packCodes(codes, 4);
    const scales = Uint8Array.of(0x40, 0x30); // 2 and 0.5
    expect(Array.from(dequantizeFp(words, scales, { mode: 'nvfp4', dtype: 'F32' }))).toEqual([...new Array(16).fill(2), ...new Array(16).fill(-3)]);
    const g = dequantizeFp(words, scales, { mode: 'nvfp4', dtype: 'F32', globalScale: 2688 });
    expect(g[0]).toBe(2);
    expect(() => dequantizeFp(words, scales, { mode: 'mxfp4', globalScale: 2 })).toThrow(expect.objectContaining({ code: 'MlxInvalidQuantization' }));
  });
});
