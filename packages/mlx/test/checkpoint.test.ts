import { describe, expect, it } from 'vitest';
import type { TensorDescriptor } from '@tensorport/core';
import {
  decodeFloats,
  dequantizeAffine,
  dequantizeCheckpoint,
  findQuantizedLayers,
  quantizeAffine,
  quantizeCheckpoint,
  repackCheckpoint,
  roundTo,
  wordsOf,
  type FloatDType,
} from '../src/index.ts';
import { collect, floatTensor, info } from './helpers/memory.ts';
import { normal, rng } from './helpers/random.ts';

function values(n: number, seed: number, dt: FloatDType): number[] {
  const r = rng(seed);
  return Array.from({ length: n }, () => roundTo(dt, normal(r) * 0.02));
}

/** A toy decoder layer with everything mlx-lm meets: embedding, projections with and without
 *  bias, a norm, an MoE expert stack, a conv kernel, a weight whose width fits no group. */
function toyModel(dt: FloatDType) {
  const spec: [string, number[]][] = [
    ['model.embed_tokens.weight', [10, 128]],
    ['model.layers.0.self_attn.q_proj.weight', [7, 256]],
    ['model.layers.0.self_attn.q_proj.bias', [7]],
    ['model.layers.0.input_layernorm.weight', [256]],
    ['model.layers.0.mlp.switch_mlp.up_proj.weight', [3, 5, 128]],
    ['model.layers.0.conv.weight', [4, 3, 128]],
    ['model.layers.0.odd.weight', [4, 100]],
    ['lm_head.weight', [10, 128]],
  ];
  const data = new Map<string, number[]>();
  const tensors: TensorDescriptor[] = spec.map(([name, shape], i) => {
    const v = values(shape.reduce((a, b) => a * b, 1), i + 1, dt);
    data.set(name, v);
    return floatTensor(name, dt, shape, v, 5 + i * 3);
  });
  return { tensors, data, metadata: new Map([['format', 'pt']]) };
}

describe('quantizeCheckpoint', () => {
  for (const dt of ['F32', 'F16', 'BF16'] as FloatDType[]) {
    it(`${dt}: quantizes Linear/Embedding/SwitchLinear weights as mlx-lm, bit-exact to quantizeAffine`, async () => {
      const model = toyModel(dt);
      const out = quantizeCheckpoint(model, { bits: 4, groupSize: 64, config: { model_type: 'toy' } });
      const names = out.tensors.map((t) => t.name);
      expect(out.layers.map((l) => l.path)).toEqual(['model.embed_tokens', 'model.layers.0.self_attn.q_proj', 'model.layers.0.mlp.switch_mlp.up_proj', 'lm_head']);
      // Untouched: the layer's own bias, the norm, the conv kernel, the odd width.
      for (const n of ['model.layers.0.self_attn.q_proj.bias', 'model.layers.0.input_layernorm.weight', 'model.layers.0.conv.weight', 'model.layers.0.odd.weight']) {
        expect(names).toContain(n);
        expect(out.tensors.find((t) => t.name === n)).toBe(model.tensors.find((t) => t.name === n));
      }
      const up = 'model.layers.0.mlp.switch_mlp.up_proj';
      expect(info(out.tensors.find((t) => t.name === `${up}.weight`)!)).toEqual({ name: `${up}.weight`, dtype: 'U32', shape: [3, 5, 16] });
      expect(info(out.tensors.find((t) => t.name === `${up}.scales`)!)).toEqual({ name: `${up}.scales`, dtype: dt, shape: [3, 5, 2] });
      expect(info(out.tensors.find((t) => t.name === `${up}.biases`)!)).toEqual({ name: `${up}.biases`, dtype: dt, shape: [3, 5, 2] });
      for (const layer of out.layers) {
        const w = model.data.get(layer.weight)!;
        const want = quantizeAffine(w, layer.cols, { bits: 4, groupSize: 64, dtype: dt });
        const got = await collect(out.tensors.find((t) => t.name === layer.weight)!);
        expect(Array.from(wordsOf(got))).toEqual(Array.from(want.words));
        const s = decodeFloats(await collect(out.tensors.find((t) => t.name === layer.scales)!), dt);
        const b = decodeFloats(await collect(out.tensors.find((t) => t.name === layer.biases!)!), dt);
        expect(Array.from(s)).toEqual(Array.from(want.scales));
        expect(Array.from(b)).toEqual(Array.from(want.biases));
      }
      expect(Object.fromEntries(out.metadata)).toEqual({ format: 'mlx', quantization_bits: '4', quantization_group_size: '64' });
      expect(out.config).toEqual({
        model_type: 'toy',
        quantization: { group_size: 64, bits: 4, mode: 'affine' },
        quantization_config: { group_size: 64, bits: 4, mode: 'affine' },
      });
    });
  }

  it('a predicate can give a layer its own bits (its dict written verbatim as the module entry)', () => {
    const out = quantizeCheckpoint(toyModel('F32'), {
      predicate: (t) => (t.name === 'lm_head.weight' ? { bits: 8 } : t.shape.length === 2 && t.name.endsWith('proj.weight')),
      config: {},
    });
    expect(out.layers.map((l) => [l.path, l.bits])).toEqual([['model.layers.0.self_attn.q_proj', 4], ['lm_head', 8]]);
    expect(out.config!.quantization).toEqual({ group_size: 64, bits: 4, mode: 'affine', lm_head: { bits: 8 } });
  });

  it('refuses an already-quantized checkpoint and NaN weights (naming the tensor)', async () => {
    const q = quantizeCheckpoint(toyModel('F32'));
    expect(() => quantizeCheckpoint(q)).toThrow(expect.objectContaining({ code: 'MlxInvalidQuantization' }));
    const v = new Array<number>(128).fill(0.5);
    v[70] = NaN;
    const bad = quantizeCheckpoint({ tensors: [floatTensor('a.weight', 'F32', [1, 128], v)] });
    await expect(collect(bad.tensors[0]!)).rejects.toMatchObject({ code: 'MlxNonFiniteWeight', tensor: 'a.weight' });
  });
});

describe('dequantizeCheckpoint', () => {
  it('round trip: restores shapes and dtypes, drops scales/biases, keeps the layer bias', async () => {
    const model = toyModel('BF16');
    const q = quantizeCheckpoint(model, { bits: 3, groupSize: 32 });
    const layers = findQuantizedLayers(q);
    expect(layers.map((l) => [l.path, l.bits, l.groupSize, l.source])).toEqual(layers.map((l) => [l.path, 3, 32, 'metadata']));
    const d = dequantizeCheckpoint(q);
    expect(d.tensors.map(info)).toEqual(model.tensors.map(info));
    for (const layer of layers) {
      const w = model.data.get(layer.weight)!;
      const ref = quantizeAffine(w, layer.cols, { bits: 3, groupSize: 32, dtype: 'BF16' });
      const want = dequantizeAffine(ref.words, ref.scales, ref.biases, { bits: 3, groupSize: 32, dtype: 'BF16' });
      const got = decodeFloats(await collect(d.tensors.find((t) => t.name === layer.weight)!), 'BF16');
      expect(Array.from(got)).toEqual(Array.from(want));
    }
    expect(Object.fromEntries(d.metadata)).toEqual({ format: 'mlx' });
  });

  it('output dtype can be chosen', async () => {
    const q = quantizeCheckpoint(toyModel('F16'), { bits: 8, groupSize: 128 });
    const d = dequantizeCheckpoint(q, { dtype: 'F32' });
    const t = d.tensors.find((x) => x.name === 'lm_head.weight')!;
    expect(t.dtype).toBe('F32');
    expect((await collect(t)).byteLength).toBe(10 * 128 * 4);
  });

  it('config: removes quantization and quantization_config', () => {
    const q = quantizeCheckpoint(toyModel('F32'), { config: { hidden_size: 8 } });
    const d = dequantizeCheckpoint(q, { config: q.config });
    expect(d.config).toEqual({ hidden_size: 8 });
  });
});

describe('repackCheckpoint', () => {
  it('lossless when groups split and bits do not shrink: same dequantized weights', async () => {
    const model = toyModel('F16');
    const q = quantizeCheckpoint(model, { bits: 4, groupSize: 128 });
    for (const target of [{ groupSize: 64 }, { groupSize: 32, bits: 6 }, { bits: 8 }]) {
      const r = repackCheckpoint(q, target);
      expect(r.report.every((e) => e.lossless && e.maxAbsError === 0)).toBe(true);
      const a = dequantizeCheckpoint(q);
      const b = dequantizeCheckpoint(r);
      for (const t of a.tensors) {
        const u = b.tensors.find((x) => x.name === t.name)!;
        expect(await collect(u)).toEqual(await collect(t));
      }
      const layer = findQuantizedLayers(r)[0]!;
      expect([layer.bits, layer.groupSize]).toEqual([target.bits ?? 4, target.groupSize ?? 128]);
    }
  });

  it('lossy otherwise: re-quantizes and reports the max error against the original dequantized weights', async () => {
    const model = toyModel('F32');
    const q = quantizeCheckpoint(model, { bits: 8, groupSize: 32, config: {} });
    const r = repackCheckpoint(q, { bits: 3, groupSize: 64 }, { config: q.config });
    expect(r.report.every((e) => !e.lossless && e.maxAbsError === null)).toBe(true);
    const a = dequantizeCheckpoint(q);
    const b = dequantizeCheckpoint(r, { config: r.config });
    for (const e of r.report) {
      const name = `${e.path}.weight`;
      await collect(r.tensors.find((t) => t.name === name)!);
      const x = decodeFloats(await collect(a.tensors.find((t) => t.name === name)!), 'F32');
      const y = decodeFloats(await collect(b.tensors.find((t) => t.name === name)!), 'F32');
      const err = Math.max(...Array.from(x, (v, i) => Math.abs(v - y[i]!)));
      expect(e.maxAbsError).toBe(err);
      expect(err).toBeGreaterThan(0);
    }
    expect(r.config!.quantization).toEqual({ group_size: 64, bits: 3, mode: 'affine' });
    expect(r.metadata.get('quantization_bits')).toBe('3');
  });

  it('refuses a group size the rows do not divide into', () => {
    const q = quantizeCheckpoint({ tensors: [floatTensor('a.weight', 'F32', [2, 96], values(192, 1, 'F32'))] }, { groupSize: 32 });
    expect(() => repackCheckpoint(q, { groupSize: 64 })).toThrow(expect.objectContaining({ code: 'MlxInvalidQuantization' }));
  });
});
