/**
 * Worked examples of how MLX dequantizes, each chosen so that the rule it shows makes a
 * difference (the values tensorport produced before each rule are noted and asserted to differ).
 */
import { describe, expect, it } from 'vitest';
import { decodeFloats, dequantizeAffine, dequantizeCheckpoint, dequantizeFp, encodeFloats, packCodes } from '../src/index.ts';
import { collect, memTensor } from './helpers/memory.ts';

const f = Math.fround;

function layer(codes: number[], scales: Uint8Array, name = 'l') {
  const words = packCodes(codes, 4);
  return [memTensor(`${name}.weight`, 'U32', [1, words.length], new Uint8Array(words.buffer)), memTensor(`${name}.scales`, 'U8', [1, scales.length], scales)];
}

describe('affine: computed in the scales dtype, then cast (ops.cpp dequantize → astype)', () => {
  it('BF16 scale −0.142578125, bias 1, code 7, asked for F32: 0, not 0.001953125', async () => {
    const codes = Array.from({ length: 32 }, (_, i) => (i === 0 ? 7 : 0));
    const words = packCodes(codes, 4);
    const got = dequantizeAffine(words, [-0.142578125], [1], { bits: 4, groupSize: 32, dtype: 'BF16', outDtype: 'F32' });
    // 7 · −0.142578125 = −0.998046875 lies halfway between two bf16 values; ties to even give −1.
    expect(got[0]).toBe(0);
    expect(f(7 * -0.142578125) + 1).toBe(0.001953125); // what computing in F32 gives
    expect(got[1]).toBe(1);

    const tensors = [
      memTensor('l.weight', 'U32', [1, 4], new Uint8Array(words.buffer)),
      memTensor('l.scales', 'BF16', [1, 1], encodeFloats([-0.142578125], 'BF16')),
      memTensor('l.biases', 'BF16', [1, 1], encodeFloats([1], 'BF16')),
    ];
    const d = dequantizeCheckpoint({ tensors, metadata: null }, { bits: 4, groupSize: 32, dtype: 'F32' });
    expect(d.tensors[0]!.dtype).toBe('F32');
    const out = decodeFloats(await collect(d.tensors[0]!), 'F32');
    expect(out[0]).toBe(0);
  });

  it('F16 scales asked for BF16: the F16 result is rounded to BF16 once', () => {
    // s = 0.0999755859375 (F16), q = 3: F16(0.2999267578125) = 0.2999267578125 → BF16 0.30078125;
    // computing in BF16 instead would round s to 0.10009765625 first and give 0.30029296875.
    const codes = Array.from({ length: 32 }, () => 3);
    const got = dequantizeAffine(packCodes(codes, 4), [0.0999755859375], [0], { bits: 4, groupSize: 32, dtype: 'F16', outDtype: 'BF16' });
    expect(got[0]).toBe(0.30078125);
  });
});

describe('mxfp4 / mxfp8 scales', () => {
  const codes = [7, 1, 0, ...new Array(29).fill(0)];
  it('cpu, F16: the E8M0 scale is made an F16 first, so 2^−27 becomes 0 and 2^16 becomes Inf (0 · Inf = NaN)', () => {
    const small = dequantizeFp(packCodes(codes, 4), Uint8Array.of(100), { mode: 'mxfp4', dtype: 'F16', variant: 'cpu' });
    expect(small[0]).toBe(0); // 6 · 0
    const gpuSmall = dequantizeFp(packCodes(codes, 4), Uint8Array.of(100), { mode: 'mxfp4', dtype: 'F16' });
    expect(gpuSmall[0]).toBe(2 ** -24); // 6 · 2^−27 = 0.75 · 2^−24 rounds up to the least F16 subnormal
    const large = dequantizeFp(packCodes(codes, 4), Uint8Array.of(143), { mode: 'mxfp4', dtype: 'F16', variant: 'cpu' });
    expect(large[0]).toBe(Infinity);
    expect(large[1]).toBe(Infinity); // 0.5 · Inf
    expect(large[2]).toBeNaN(); // 0 · Inf
    const gpuLarge = dequantizeFp(packCodes(codes, 4), Uint8Array.of(143), { mode: 'mxfp4', dtype: 'F16' });
    expect([gpuLarge[1], gpuLarge[2]]).toEqual([32768, 0]);
  });

  it('cpu and gpu agree in BF16 and F32 (every E8M0 scale below 0xFF is representable there)', () => {
    for (const dtype of ['BF16', 'F32'] as const) {
      for (const byte of [0, 1, 100, 143, 254]) {
        const a = dequantizeFp(packCodes(codes, 4), Uint8Array.of(byte), { mode: 'mxfp4', dtype, variant: 'cpu' });
        const b = dequantizeFp(packCodes(codes, 4), Uint8Array.of(byte), { mode: 'mxfp4', dtype });
        expect(Array.from(a)).toEqual(Array.from(b));
      }
    }
  });

  it('byte 0xFF decodes to Inf (not NaN), E4M3 element 0x7F to 480 (not NaN)', () => {
    const inf = dequantizeFp(packCodes(codes, 4), Uint8Array.of(0xff), { mode: 'mxfp4', dtype: 'F32' });
    expect([inf[0], inf[1]]).toEqual([Infinity, Infinity]);
    expect(inf[2]).toBeNaN();
    const bytes = new Uint8Array(32);
    bytes[0] = 0x7f;
    bytes[1] = 0xff;
    const e8 = dequantizeFp(new Uint32Array(bytes.buffer), Uint8Array.of(126), { mode: 'mxfp8', dtype: 'BF16' });
    expect([e8[0], e8[1]]).toEqual([240, -240]);
  });
});

describe('nvfp4 with a global scale', () => {
  // Code 3 (1.5), scale byte 0x34 (0.75), global scale 1: MLX computes 1.5 · f32(0.75 · f32(1 / 2688)).
  const codes = [3, ...new Array(15).fill(0)];
  const want = f(1.5 * f(0.75 * f(1 / 2688)));
  it('multiplies scale by global / 2688 first, then the element', () => {
    expect(want).not.toBe(f(f(1.5 * 0.75) * f(1 / 2688))); // the order tensorport used
    const gpu = dequantizeFp(packCodes(codes, 4), Uint8Array.of(0x34), { mode: 'nvfp4', dtype: 'F32', globalScale: 1 });
    expect(gpu[0]).toBe(want);
  });

  it('cpu returns F32 whatever dtype is asked; gpu casts to it', async () => {
    const tensors = layer(codes, Uint8Array.of(0x34));
    const cpu = dequantizeCheckpoint({ tensors, metadata: null }, { dtype: 'BF16', globalScale: 1, variant: 'cpu' });
    expect(cpu.tensors[0]!.dtype).toBe('F32');
    expect(decodeFloats(await collect(cpu.tensors[0]!), 'F32')[0]).toBe(want);
    const gpu = dequantizeCheckpoint({ tensors: layer(codes, Uint8Array.of(0x34)), metadata: null }, { dtype: 'BF16', globalScale: 1 });
    expect(gpu.tensors[0]!.dtype).toBe('BF16');
    expect(decodeFloats(await collect(gpu.tensors[0]!), 'BF16')[0]).toBe(0.0004177093505859375); // the F32 value above, rounded to BF16
  });
});
