/**
 * mlx-lm's per-layer choices (mixed recipes, the architecture's router rule) on a tiny model
 * directory made by numpy + safetensors, checked against a transcription of mlx-lm's predicates
 * (test/helpers/mlx_lm_recipes.py): the layer bits read back from the written directory and the
 * config.json section must be what mlx-lm would produce for the same config.
 * Written by the library's writeMlxModelLayout over a FileTarget (moved from @tensorport/mlx).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { findQuantizedLayers, isQuantizable, MIXED_RECIPES, quantizeCheckpoint, type MixedRecipe } from '@tensorport/mlx';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { openMlxModel, writeMlxModelDir } from './helpers/mlx-model.ts';

const py = await requirePython(['numpy', 'safetensors']);
const oracle = fileURLToPath(new URL('../../mlx/test/helpers/mlx_lm_recipes.py', import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), 'tensorport-recipes-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

// 8 layers: the recipes' "more bits" layers are 0, 3, 6 and 7.
const MAKE = `
import json, os, sys
import numpy as np
from safetensors.numpy import save_file
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(5)
t = {}
def w(name, *shape):
    t[name] = (rng.standard_normal(shape) * 0.02).astype(np.float16)
w("model.embed_tokens.weight", 64, 64)
for i in range(8):
    p = f"model.layers.{i}."
    t[p + "input_layernorm.weight"] = np.ones(64, np.float16)
    for k in ("q", "k", "v", "o"):
        w(p + f"self_attn.{k}_proj.weight", 64, 64)
    w(p + "mlp.gate.weight", 4, 64)
    for k in ("gate", "up", "down"):
        w(p + f"mlp.switch_mlp.{k}_proj.weight", 2, 64, 64)
w("model.layers.0.self_attn.odd_proj.weight", 8, 96)
t["model.norm.weight"] = np.ones(64, np.float16)
w("lm_head.weight", 64, 64)
save_file(t, os.path.join(out, "model.safetensors"))
json.dump({"model_type": "qwen3_moe", "num_hidden_layers": 8, "hidden_size": 64, "torch_dtype": "float16"}, open(os.path.join(out, "config.json"), "w"))
`;

type Answer = { section: Record<string, unknown>; layers: Record<string, [number, number, string] | null> };
const CASES: [MixedRecipe | null, number | null][] = [...MIXED_RECIPES.map((r) => [r, null] as [MixedRecipe, null]), ['mixed_3_6', 32], [null, null]];

describe.skipIf(!py)('mlx-lm recipes and architecture rules', () => {
  const src = join(tmp, 'float');
  let answers: Promise<Answer[]> | null = null;
  /** The model directory, and mlx-lm's choices for every case in one oracle run. */
  const prepare = () =>
    (answers ??= (async () => {
      await runPython(py!.exe, MAKE, { args: [src] });
      const { checkpoint, config } = await openMlxModel(src);
      const modules = checkpoint.tensors.filter((t) => isQuantizable(t, 1)).map((t) => [t.name.slice(0, -7), t.shape[t.shape.length - 1]]);
      await checkpoint.close();
      const requests = CASES.map(([recipe, groupSize]) => ({ modules, recipe, group_size: groupSize, bits: null, num_layers: 8, model_type: config!.model_type }));
      const text = await runPython(py!.exe, `import runpy, sys; sys.argv = [sys.argv[1]]; runpy.run_path(sys.argv[0], run_name='__main__')`, { args: [oracle], input: JSON.stringify(requests) });
      return JSON.parse(text) as Answer[];
    })());

  async function check(recipe: MixedRecipe | null, groupSize: number | null) {
    const want = (await prepare())[CASES.findIndex(([r, g]) => r === recipe && g === groupSize)]!;
    const { checkpoint, config } = await openMlxModel(src);
    try {
      const q = quantizeCheckpoint(checkpoint, { config, ...(recipe ? { recipe } : {}), ...(groupSize === null ? {} : { groupSize }) });
      const out = join(tmp, `${recipe ?? 'model-rule'}-${groupSize ?? 'default'}`);
      await writeMlxModelDir(out, q);
      const again = await openMlxModel(out);
      try {
        const got = Object.fromEntries(findQuantizedLayers(again.checkpoint, { config: again.config }).map((l) => [l.path, [l.bits, l.groupSize, l.mode]]));
        const expected = Object.fromEntries(Object.entries(want.layers).filter(([, v]) => v !== null));
        expect(got).toEqual(expected);
        const written = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8')) as Record<string, Record<string, unknown>>;
        expect(written.quantization).toEqual(want.section);
        expect(written.quantization_config).toEqual(want.section);
        // Entries keep mlx-lm's key order.
        for (const [k, v] of Object.entries(written.quantization!)) {
          if (typeof v === 'object' && v !== null) expect(Object.keys(v)).toEqual(Object.keys(want.section[k] as object));
        }
        return got;
      } finally {
        await again.checkpoint.close();
      }
    } finally {
      await checkpoint.close();
    }
  }

  for (const recipe of MIXED_RECIPES) {
    it(`${recipe}: the layer bits and config entries mlx-lm chooses (group size not given: entries say null)`, async () => {
      const got = await check(recipe, null);
      const bits = new Set(Object.values(got).map((v) => v[0]));
      expect(bits.size).toBe(2); // both the low and the high width occur
    });
  }

  it('mixed_3_6 with --group-size 32: the 96-wide layer joins, entries carry 32', async () => {
    const got = await check('mixed_3_6', 32);
    expect(got['model.layers.0.self_attn.odd_proj']).toEqual([3, 32, 'affine']);
  });

  it('no recipe: qwen3_moe routers (mlp.gate) at 8 bits / group 64, as its quant_predicate says', async () => {
    const got = await check(null, null);
    expect(got['model.layers.3.mlp.gate']).toEqual([8, 64, 'affine']);
    expect(got['model.layers.3.self_attn.q_proj']).toEqual([4, 64, 'affine']);
  });
});
