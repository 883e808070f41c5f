import { f16BitsToF32, f32BitsToBf16, f32BitsToF16, bf16BitsToF32 } from '@tensorport/core';
import { describe, expect, it } from 'vitest';
import { roundBf16Lane, roundF16Lane } from '../src/float.ts';
import { rng } from './helpers/random.ts';

/** f32 bit patterns around every exponent, at and next to the rounding ties, plus random ones. */
function patterns(): number[] {
  const out: number[] = [];
  const r = rng(7);
  for (let e = 0; e < 256; e++) {
    for (const m of [0, 1, 0xfff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x3000, 0x7fff, 0x8000, 0x8001, 0x18000, 0x7fe000, 0x7fefff, 0x7ff000, 0x7ff001, 0x7fffff]) {
      for (const sign of [0, 0x80000000]) out.push((sign | (e << 23) | m) | 0);
    }
  }
  for (let i = 0; i < 20000; i++) out.push((Math.floor(r() * 2 ** 32)) | 0);
  return out;
}

describe('rounding f32 lanes to F16 / BF16 (the dequantize fast paths)', () => {
  it('F16: the same bits as the exact conversion there and back, for every exponent and near ties', () => {
    for (const x of patterns()) {
      const want = f16BitsToF32(f32BitsToF16(x)) | 0;
      const got = roundF16Lane(x);
      if (got !== want) expect({ x: x >>> 0, got: got >>> 0 }).toEqual({ x: x >>> 0, got: want >>> 0 });
    }
  });

  it('BF16: the same bits as the exact conversion there and back', () => {
    for (const x of patterns()) {
      const want = bf16BitsToF32(f32BitsToBf16(x)) | 0;
      const got = roundBf16Lane(x);
      if (got !== want) expect({ x: x >>> 0, got: got >>> 0 }).toEqual({ x: x >>> 0, got: want >>> 0 });
    }
  });
});
