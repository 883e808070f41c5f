/** mlx-lm's per-layer overrides and recipe refusals (the on-disk recipe checks are in packages/tensorport/test/mlx-recipes.test.ts). */
import { describe, expect, it } from 'vitest';
import { parseLayerOverride, quantizeCheckpoint } from '../src/index.ts';

describe('per-layer overrides (--bits-for)', () => {
  it('parses pattern=bits, pattern=bits/group and pattern=float; refuses the rest', () => {
    expect(parseLayerOverride('lm_head=8').spec).toEqual({ bits: 8, mode: 'affine' });
    expect(parseLayerOverride('mlp\\.gate$=8/128').spec).toEqual({ groupSize: 128, bits: 8, mode: 'affine' });
    expect(parseLayerOverride('embed=float').spec).toBe(false);
    for (const bad of ['lm_head', '=8', 'x=8/', 'x=eight', '(=8']) expect(() => parseLayerOverride(bad)).toThrow(expect.objectContaining({ code: 'InvalidOption' }));
  });

  it('the first matching override decides, over the recipe; float keeps the weight', async () => {
    const { floatTensor } = await import('./helpers/memory.ts');
    const v = new Array(64 * 64).fill(0.01);
    const tensors = ['model.layers.0.self_attn.v_proj.weight', 'model.layers.0.mlp.down_proj.weight', 'model.layers.1.mlp.down_proj.weight', 'lm_head.weight'].map((n) => floatTensor(n, 'F32', [64, 64], v));
    const q = quantizeCheckpoint(
      { tensors },
      { recipe: 'mixed_4_6', config: { num_hidden_layers: 2 }, overrides: [parseLayerOverride('lm_head=float'), parseLayerOverride('layers\\.1\\..*down=8'), parseLayerOverride('down=2')] },
    );
    expect(q.layers.map((l) => [l.path, l.bits])).toEqual([
      ['model.layers.0.self_attn.v_proj', 4], // 2 layers: only layer 1 is a "more bits" layer
      ['model.layers.0.mlp.down_proj', 2],
      ['model.layers.1.mlp.down_proj', 8],
    ]);
    expect(q.config!.quantization).toMatchObject({ 'model.layers.1.mlp.down_proj': { group_size: 64, bits: 8, mode: 'affine' } });
    expect(q.tensors.find((t) => t.name === 'lm_head.weight')!.dtype).toBe('F32');
  });

  it('a recipe without down_proj modules, or with an fp mode, is refused', () => {
    expect(() => quantizeCheckpoint({ tensors: [] }, { recipe: 'mixed_4_6' })).toThrow(expect.objectContaining({ code: 'MlxUnsupportedQuantization' }));
    expect(() => quantizeCheckpoint({ tensors: [] }, { recipe: 'mixed_4_6', mode: 'mxfp4' })).toThrow(expect.objectContaining({ code: 'MlxUnsupportedQuantization' }));
  });
});
