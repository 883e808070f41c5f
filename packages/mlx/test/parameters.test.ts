/**
 * Parameter counts as mlx-lm states them (utils.py get_total_parameters → the index's
 * total_parameters): a quantized layer counts its logical weights (packed words × 32 / bits) and
 * its own bias, not its scales or biases. The Hub's count (and inspect's per-dtype totals) are the
 * stored elements instead.
 */
import { describe, expect, it } from 'vitest';
import { elementCount, type TensorDescriptor } from '@tensorport/core';
import { dequantizeCheckpoint, formatMlxIndex, planMlxShards, quantizeCheckpoint, totalParameters } from '../src/index.ts';
import { floatTensor } from './helpers/memory.ts';

function model(): TensorDescriptor[] {
  const spec: [string, number[]][] = [
    ['model.embed_tokens.weight', [16, 128]],
    ['model.layers.0.self_attn.q_proj.weight', [8, 192]],
    ['model.layers.0.self_attn.q_proj.bias', [8]],
    ['model.layers.0.mlp.switch_mlp.up_proj.weight', [2, 4, 128]],
    ['model.norm.weight', [128]],
  ];
  return spec.map(([n, shape]) => floatTensor(n, 'BF16', shape, Array.from({ length: elementCount(shape) }, (_, i) => Math.sin(i) * 0.02)));
}

const logical = model().reduce((n, t) => n + elementCount(t.shape), 0);

describe('total_parameters', () => {
  for (const [mode, bits] of [['affine', 3], ['affine', 8], ['mxfp4', undefined], ['mxfp8', undefined], ['nvfp4', undefined]] as const) {
    it(`${mode}${bits ? ` ${bits} bits` : ''}: the float model's count, whatever the packing`, () => {
      const q = quantizeCheckpoint({ tensors: model() }, { mode, ...(bits ? { bits, groupSize: 64 } : {}) });
      expect(q.layers).toHaveLength(3);
      expect(totalParameters(q.tensors, q.layers)).toBe(logical);
      // The Hub counts stored elements: fewer packed weights, plus every scale (and bias).
      const stored = q.tensors.reduce((n, t) => n + elementCount(t.shape), 0);
      expect(stored).not.toBe(logical);
      const index = JSON.parse(formatMlxIndex(planMlxShards(q.tensors), totalParameters(q.tensors, q.layers)));
      expect(index.metadata.total_parameters).toBe(logical);
    });
  }

  it('a dequantized result lists the layers it undid; its float weights count once, not × 32 / bits', () => {
    const q = quantizeCheckpoint({ tensors: model() }, { bits: 4, groupSize: 64 });
    const d = dequantizeCheckpoint(q, { bits: 4, groupSize: 64 });
    expect(d.layers).toHaveLength(3);
    expect(totalParameters(d.tensors, d.layers)).toBe(logical);
  });
});
