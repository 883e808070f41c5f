/** The worked examples and test vectors of the MLX notes (mlx.md §1.4, §1.3, §1.5). */
import { describe, expect, it } from 'vitest';
import { dequantizeAffine, packCodes, quantizeAffine, roundTo, unpackCodes } from '../src/index.ts';

const hex = (w: Uint32Array) => Array.from(w, (x) => x.toString(16).padStart(8, '0'));

describe('golden vectors from the notes', () => {
  it('packing table: codes i mod 2^bits for i = 0..31', () => {
    const table: Record<number, string> = {
      2: 'e4e4e4e4 e4e4e4e4',
      3: '88fac688 c688fac6 fac688fa',
      4: '76543210 fedcba98 76543210 fedcba98',
      5: '8a418820 c5a92839 ca307b9a 38bdab49 ffbbcdeb',
      6: '440c2040 a2481c61 3ce34c2c 544d2450 a6585d65 7de75c6d',
      8: '03020100 07060504 0b0a0908 0f0e0d0c 13121110 17161514 1b1a1918 1f1e1d1c',
    };
    for (const [bits, words] of Object.entries(table)) {
      const b = Number(bits);
      const codes = Array.from({ length: 32 }, (_, i) => i % 2 ** b);
      const packed = packCodes(codes, b);
      expect(hex(packed).join(' ')).toBe(words);
      expect(Array.from(unpackCodes(packed, b, 32))).toEqual(codes);
    }
  });

  // np.linspace(-0.9, 0.5, 32) in bf16, bits 4, group 32.
  const w = Array.from({ length: 32 }, (_, i) => roundTo('BF16', -0.9 + i * (1.4 / 31)));

  it('the bf16 linspace inputs are the ones listed', () => {
    expect(w.slice(0, 3)).toEqual([-0.8984375, -0.85546875, -0.80859375]);
    expect(w[9]).toBe(-0.494140625);
    expect(w[31]).toBe(0.5);
  });

  it('cpu variant: scale, bias, codes and words', () => {
    const q = quantizeAffine(w, 32, { bits: 4, groupSize: 32, variant: 'cpu', dtype: 'BF16' });
    expect(q.scales[0]).toBe(0.08984375);
    expect(q.biases[0]).toBe(-0.8984375);
    expect(Array.from(unpackCodes(q.words, 4, 32))).toEqual([0, 0, 1, 1, 2, 2, 3, 4, 4, 4, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15, 15]);
    expect(hex(q.words)).toEqual(['43221100', '87766544', 'cbbaa998', 'fffeeddc']);
  });

  it('gpu variant: element 9 is a tie that rounds away from zero; only word 1 differs', () => {
    const q = quantizeAffine(w, 32, { bits: 4, groupSize: 32, variant: 'gpu', dtype: 'BF16' });
    expect(unpackCodes(q.words, 4, 32)[9]).toBe(5);
    expect(hex(q.words)).toEqual(['43221100', '87766554', 'cbbaa998', 'fffeeddc']);
  });

  it('all-negative group (-1.00 … -1.31): cpu scale ≈ 0.0208, gpu scale ≈ 0.0873, bias -1.31', () => {
    const neg = Array.from({ length: 32 }, (_, i) => Math.fround(-1 - (i * 0.31) / 31));
    const cpu = quantizeAffine(neg, 32, { bits: 4, groupSize: 32, variant: 'cpu' });
    const gpu = quantizeAffine(neg, 32, { bits: 4, groupSize: 32, variant: 'gpu' });
    expect(cpu.scales[0]).toBeCloseTo(0.0208, 4);
    expect(gpu.scales[0]).toBeCloseTo(0.0873, 4);
    expect(cpu.biases[0]).toBe(Math.fround(-1.31));
    expect(gpu.biases[0]).toBe(Math.fround(-1.31));
    // cpu: the snapped scale is exactly edge / q0 with q0 = rint(-1.31 / (0.31/15)) = -63.
    expect(cpu.scales[0]).toBe(Math.fround(Math.fround(-1.31) / -63));
  });

  it('MLX test property: x = arange(0, 512) per row, gs 128, bits 2/4/8: max error ≤ 127 / 2^bits', () => {
    const x = Array.from({ length: 512 * 4 }, (_, i) => i % 512);
    for (const bits of [2, 4, 8]) {
      const q = quantizeAffine(x, 512, { bits, groupSize: 128 });
      expect(q.words.length).toBe((4 * 512 * bits) / 32);
      expect(q.scales.length).toBe(16);
      const back = dequantizeAffine(q.words, q.scales, q.biases, { bits, groupSize: 128 });
      const err = Math.max(...x.map((v, i) => Math.abs(v - back[i]!)));
      expect(err).toBeLessThanOrEqual(127 / 2 ** bits);
    }
  });
});
