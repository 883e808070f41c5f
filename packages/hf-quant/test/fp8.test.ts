import { readFile } from 'node:fs/promises';
import { BytesSource, f32BitsToBf16, openSafetensors, TensorportError, type TensorDescriptor } from '@tensorport/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { dequantizeFp8Block, E4M3FN_VALUES, fp8Layers, hfQuantScheme, isFp8Block, type Fp8BlockScheme } from '../src/index.ts';

const FIX = new URL('../../../fixtures/quantized/', import.meta.url);
const open = async (rel: string) => openSafetensors(new BytesSource(new Uint8Array(await readFile(new URL(rel, FIX)))));

async function bytesOf(t: TensorDescriptor): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const c of t.chunks()) parts.push(c);
  return Buffer.concat(parts);
}

/** A tensor over bytes, streamed in chunks of `chunk` bytes (the writer's reads come in any size). */
function memTensor(name: string, dtype: TensorDescriptor['dtype'], shape: number[], bytes: Uint8Array, chunk = 1 << 20): TensorDescriptor {
  return {
    name, dtype, shape, byteLength: bytes.byteLength,
    async *chunks() {
      for (let at = 0; at < bytes.byteLength; at += chunk) yield bytes.subarray(at, Math.min(bytes.byteLength, at + chunk));
    },
  };
}

const py = await requirePython(['torch']);

const SCHEME: Fp8BlockScheme = { method: 'fp8', format: 'e4m3', blockSize: [128, 128], activationScheme: 'dynamic' };

describe('E4M3FN_VALUES (torch float8_e4m3fn)', () => {
  it('has the format’s landmarks: ±448 largest, NaN at S.1111.111, subnormals down to 2^-9, signed zero', () => {
    expect(E4M3FN_VALUES[0x7e]).toBe(448);
    expect(E4M3FN_VALUES[0xfe]).toBe(-448);
    expect(E4M3FN_VALUES[0x7f]).toBeNaN();
    expect(E4M3FN_VALUES[0xff]).toBeNaN();
    expect(E4M3FN_VALUES[0x38]).toBe(1);
    expect(E4M3FN_VALUES[0x01]).toBe(2 ** -9);
    expect(E4M3FN_VALUES[0x08]).toBe(2 ** -6);
    expect(Object.is(E4M3FN_VALUES[0x80], -0)).toBe(true);
  });

  it.skipIf(!py)('equals torch’s decoding of all 256 bytes', async () => {
    const out = await runPython(py!.exe, 'import torch, json; print(json.dumps([None if v != v else v for v in torch.arange(256, dtype=torch.uint8).view(torch.float8_e4m3fn).float().tolist()]))');
    const theirs = JSON.parse(out.trim().split('\n').pop()!) as Array<number | null>;
    expect(Array.from(E4M3FN_VALUES, (v) => (Number.isNaN(v) ? null : v))).toEqual(theirs);
  });
});

describe('hfQuantScheme', () => {
  it('reads FP8 block scaling from quantization_config, names other methods, and refuses what it cannot read', () => {
    expect(hfQuantScheme(undefined)).toBeNull();
    expect(hfQuantScheme({ model_type: 'llama' })).toBeNull();
    expect(hfQuantScheme({ quantization_config: { quant_method: 'fp8', weight_block_size: [128, 128], activation_scheme: 'dynamic', fmt: 'e4m3' } })).toEqual(SCHEME);
    expect(isFp8Block(hfQuantScheme({ quantization_config: { quant_method: 'fp8', weight_block_size: [64, 32] } }))).toBe(true);
    expect(hfQuantScheme({ quantization_config: { quant_method: 'gptq', bits: 4 } })).toEqual({ method: 'gptq' });
    const code = (config: unknown) => {
      try {
        hfQuantScheme(config as Record<string, unknown>);
      } catch (e) {
        return (e as TensorportError).code;
      }
      return null;
    };
    expect(code({ quantization_config: { quant_method: 'fp8', weight_block_size: [128] } })).toBe('QuantInvalidConfig');
    expect(code({ quantization_config: { quant_method: 'fp8', weight_block_size: [0, 128] } })).toBe('QuantInvalidConfig');
    expect(code({ quantization_config: { quant_method: 'fp8' } })).toBe('QuantUnsupported');
    expect(code({ quantization_config: { quant_method: 'fp8', weight_block_size: [128, 128], fmt: 'e5m2' } })).toBe('QuantUnsupported');
    expect(code({ quantization_config: 'fp8' })).toBe('QuantInvalidConfig');
    expect(code({ quantization_config: { quant_method: 4 } })).toBe('QuantInvalidConfig');
    // mlx-lm's mirror of its own section: no quant_method, not a Hub scheme
    expect(hfQuantScheme({ quantization: { group_size: 64, bits: 4 }, quantization_config: { group_size: 64, bits: 4 } })).toBeNull();
  });
});

describe('fp8Layers', () => {
  const w = (name: string, shape: number[], dtype: TensorDescriptor['dtype'] = 'F8_E4M3') => memTensor(name, dtype, shape, new Uint8Array(shape.reduce((a, b) => a * b, 1) * (dtype === 'F32' ? 4 : 1)));
  const fail = (tensors: TensorDescriptor[]) => {
    try {
      fp8Layers(tensors, SCHEME);
    } catch (e) {
      const err = e as TensorportError;
      return { code: err.code, tensor: err.tensor, message: err.message };
    }
    return null;
  };

  it('pairs each F8_E4M3 weight with its scale, edge blocks counted', () => {
    expect(fp8Layers([w('a.weight', [200, 300]), w('a.weight_scale_inv', [2, 3], 'F32'), w('n.weight', [200], 'F32')], SCHEME)).toEqual([{ weight: 'a.weight', scale: 'a.weight_scale_inv' }]);
  });

  it('refuses, naming the tensor: a missing scale, a scale of the wrong shape or dtype, an orphan scale, a 3-D weight', () => {
    expect(fail([w('a.weight', [200, 300])])).toMatchObject({ code: 'QuantMissingScale', tensor: 'a.weight' });
    expect(fail([w('a.weight', [200, 300]), w('a.weight_scale_inv', [2, 2], 'F32')])).toEqual({
      code: 'QuantScaleMismatch', tensor: 'a.weight_scale_inv', message: 'a.weight_scale_inv has shape [2, 2]; a.weight [200, 300] in 128×128 blocks needs [2, 3]',
    });
    expect(fail([w('a.weight', [200, 300]), w('a.weight_scale_inv', [2, 3], 'U8')])).toMatchObject({ code: 'QuantScaleMismatch', tensor: 'a.weight_scale_inv' });
    expect(fail([w('b.weight', [2, 3], 'F32'), w('b.weight_scale_inv', [1, 1], 'F32')])).toMatchObject({ code: 'QuantScaleMismatch', tensor: 'b.weight_scale_inv' });
    expect(fail([w('e.weight', [4, 200, 300]), w('e.weight_scale_inv', [4, 2, 3], 'F32')])).toMatchObject({ code: 'QuantUnsupported', tensor: 'e.weight' });
  });
});

/** The reference, one element at a time: e4m3 × its block's scale in float32, then the output dtype's bits. */
function naive(q: Uint8Array, rows: number, cols: number, s: Float32Array, bm: number, bn: number, dtype: 'F32' | 'BF16'): Uint8Array {
  const f = new Float32Array(rows * cols);
  const sc = Math.ceil(cols / bn);
  for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) f[i * cols + j] = Math.fround(E4M3FN_VALUES[q[i * cols + j]!]! * s[Math.floor(i / bm) * sc + Math.floor(j / bn)]!);
  if (dtype === 'F32') return new Uint8Array(f.buffer);
  const bits = new Uint32Array(f.buffer);
  return new Uint8Array(Uint16Array.from(bits, (b) => f32BitsToBf16(b)).buffer);
}

describe('dequantizeFp8Block', () => {
  it('gives the oracle’s bytes for every layer of the committed model (bf16 and f32; DeepSeek weight_dequant in torch)', async () => {
    const model = await open('fp8-llama/model.safetensors');
    const oracles = { BF16: await open('fp8-llama.dequantized-bf16.safetensors'), F32: await open('fp8-llama.dequantized-f32.safetensors') };
    const byName = new Map(model.tensors.map((t) => [t.name, t]));
    const layers = fp8Layers(model.tensors, SCHEME);
    expect(layers.length).toBe(14);
    for (const dtype of ['BF16', 'F32'] as const) {
      const want = new Map(oracles[dtype].tensors.map((t) => [t.name, t]));
      for (const l of layers) {
        const d = dequantizeFp8Block(byName.get(l.weight)!, byName.get(l.scale)!, SCHEME.blockSize, dtype);
        expect(d.dtype).toBe(dtype);
        expect(Buffer.from(await bytesOf(d)).equals(Buffer.from(await bytesOf(want.get(l.weight)!))), `${l.weight} ${dtype}`).toBe(true);
      }
    }
  });

  it('streams any shape, block size and chunking to the element-wise reference (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 16 }), fc.integer({ min: 1, max: 16 }), fc.integer({ min: 1, max: 97 }), fc.constantFrom('F32' as const, 'BF16' as const), fc.integer({ min: 0, max: 2 ** 31 }),
        async (rows, cols, bm, bn, chunk, dtype, seed) => {
          const q = new Uint8Array(rows * cols);
          let x = seed;
          for (let i = 0; i < q.length; i++) {
            x = (x * 1103515245 + 12345) >>> 0;
            q[i] = (x >>> 16) & 0xff; // every code, NaN's included (both sides store through a Float32Array)
          }
          const s = Float32Array.from({ length: Math.ceil(rows / bm) * Math.ceil(cols / bn) }, (_, i) => Math.fround(0.001 * (i + 1) * (seed % 7 + 1)));
          const weight = memTensor('w', 'F8_E4M3', [rows, cols], q, chunk);
          const scale = memTensor('w_scale_inv', 'F32', [Math.ceil(rows / bm), Math.ceil(cols / bn)], new Uint8Array(s.buffer), 3);
          const got = await bytesOf(dequantizeFp8Block(weight, scale, [bm, bn], dtype));
          expect(Buffer.from(got).equals(Buffer.from(naive(q, rows, cols, s, bm, bn, dtype)))).toBe(true);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('a weight that streams fewer bytes than its shape is a ShortRead naming it', async () => {
    const short = { ...memTensor('w', 'F8_E4M3', [4, 4], new Uint8Array(12)), byteLength: 16 };
    const scale = memTensor('w_scale_inv', 'F32', [1, 1], new Uint8Array(new Float32Array([1]).buffer));
    await expect(bytesOf(dequantizeFp8Block(short, scale, [128, 128], 'F32'))).rejects.toMatchObject({ code: 'ShortRead', tensor: 'w' });
  });
});
