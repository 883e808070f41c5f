import { describe, expect, it } from 'vitest';
import { decodeFloats, dequantizeCheckpoint, dequantizeFp, e4m3ToNumber, e8m0ToNumber, findQuantizedLayers, FP4_VALUES, packCodes } from '../src/index.ts';
import { collect, memTensor } from './helpers/memory.ts';

describe('mxfp4 / mxfp8 / nvfp4', () => {
  it('decodes E4M3 (FN) and E8M0', () => {
    expect(e4m3ToNumber(0x7e)).toBe(448);
    expect(e4m3ToNumber(0xfe)).toBe(-448);
    expect(e4m3ToNumber(0x38)).toBe(1);
    expect(e4m3ToNumber(0x08)).toBe(2 ** -6);
    expect(e4m3ToNumber(0x01)).toBe(2 ** -9);
    expect(e4m3ToNumber(0x7f)).toBe(480); // MLX decodes through an f16 bit shift: no NaN
    expect(e8m0ToNumber(127)).toBe(1);
    expect(e8m0ToNumber(0)).toBe(2 ** -127);
    expect(e8m0ToNumber(254)).toBe(2 ** 127);
    expect(e8m0ToNumber(255)).toBe(Infinity); // the f32 bits 0xFF << 23
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

describe('fp layers in a checkpoint', () => {
  it('mxfp8 and nvfp4 layers are found from their shapes and dequantized to BF16 by default', async () => {
    const fp8 = Uint8Array.from({ length: 2 * 64 }, (_, i) => (i * 37) & 0x7e);
    const fp4 = Uint8Array.from({ length: 2 * 32 }, (_, i) => (i * 91) & 0xff);
    const tensors = [
      memTensor('e8.weight', 'U32', [2, 16], fp8),
      memTensor('e8.scales', 'U8', [2, 2], Uint8Array.of(127, 128, 126, 130)),
      memTensor('n4.weight', 'U32', [2, 8], fp4),
      memTensor('n4.scales', 'U8', [2, 4], Uint8Array.of(0x38, 0x40, 0x30, 0x48, 0x38, 0x39, 0x3a, 0x3b)),
    ];
    expect(findQuantizedLayers({ tensors }).map((l) => [l.path, l.mode])).toEqual([['e8', 'mxfp8'], ['n4', 'nvfp4']]);
    const d = dequantizeCheckpoint({ tensors, metadata: null });
    const e8 = decodeFloats(await collect(d.tensors[0]!), 'BF16');
    expect(d.tensors[0]!.shape).toEqual([2, 64]);
    expect(Array.from(e8)).toEqual(Array.from(dequantizeFp(new Uint32Array(fp8.buffer), Uint8Array.of(127, 128, 126, 130), { mode: 'mxfp8' })));
    const n4 = decodeFloats(await collect(d.tensors[1]!), 'BF16');
    expect(d.tensors[1]!.shape).toEqual([2, 64]);
    expect(n4[0]).toBe(FP4_VALUES[fp4[0]! & 15]! * 1);
  });
});
