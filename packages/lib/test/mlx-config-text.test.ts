import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { editJsonObject } from '@tensorport/core';
import { describe, expect, it } from 'vitest';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { dequantizeCheckpoint, quantizeCheckpoint } from '@tensorport/mlx';
import { floatTensor } from '../../mlx/test/helpers/memory.ts';
import { openMlxModel, readModelConfig, writeMlxModelDir } from './helpers/mlx-model.ts';

/**
 * Issue 11 item 3: quantize/dequantize rewrote config.json through a JS round trip, so Python's
 * `0.0` became `0` and transformers' strict MixtralConfig/Gemma2Config refused the output. The
 * configs here are the ones transformers writes (fixtures/transformers/generate.py).
 */
const CONFIGS = fileURLToPath(new URL('../../../fixtures/transformers/configs/', import.meta.url));
const MODELS = ['mixtral', 'gemma2'];

function tensors() {
  return [
    floatTensor('model.layers.0.mlp.up_proj.weight', 'BF16', [8, 64], new Array(512).fill(0).map((_, i) => Math.sin(i) / 10)),
    floatTensor('model.norm.weight', 'BF16', [64], new Array(64).fill(1)),
  ];
}

/** quantize into one directory, dequantize that into another; both config texts. */
async function roundTrip(name: string): Promise<{ original: string; quantized: string; dequantized: string; dirs: [string, string] }> {
  const original = readFileSync(join(CONFIGS, name, 'config.json'), 'utf8');
  const config = await readModelConfig(join(CONFIGS, name));
  const q = quantizeCheckpoint({ tensors: tensors() }, { bits: 4, groupSize: 32, config });
  const qdir = mkdtempSync(join(tmpdir(), `tp-cfg-q-${name}-`));
  await writeMlxModelDir(qdir, q);
  const opened = await openMlxModel(qdir);
  const ddir = mkdtempSync(join(tmpdir(), `tp-cfg-d-${name}-`));
  try {
    await writeMlxModelDir(ddir, dequantizeCheckpoint(opened.checkpoint, { config: opened.config }));
  } finally {
    await opened.checkpoint.close();
  }
  return { original, quantized: readFileSync(join(qdir, 'config.json'), 'utf8'), dequantized: readFileSync(join(ddir, 'config.json'), 'utf8'), dirs: [qdir, ddir] };
}

describe('config.json written by quantize/dequantize keeps the input text', () => {
  for (const name of MODELS) {
    it(`${name}: quantize inserts only the quantization sections; dequantize gives the input back byte for byte`, async () => {
      const r = await roundTrip(name);
      expect(r.dequantized).toBe(r.original);
      const q = JSON.parse(r.quantized) as Record<string, unknown>;
      expect(q.quantization).toEqual({ group_size: 32, bits: 4, mode: 'affine' });
      expect(q.quantization_config).toEqual(q.quantization);
      // Without the two inserted members, the input's text byte for byte (floats as Python wrote them).
      expect(editJsonObject(r.quantized, new Map([['quantization', undefined], ['quantization_config', undefined]]))).toBe(r.original);
      expect(r.quantized).toContain(name === 'mixtral' ? '"router_jitter_noise": 0.0' : '"final_logit_softcapping": 30.0');
    });
  }
});

const py = await requirePython(['transformers']);
describe.skipIf(!py)('transformers loads the configs we wrote', () => {
  it('AutoConfig.from_pretrained on quantize and dequantize outputs (strict Mixtral/Gemma2 fields)', { timeout: 300_000 }, async () => {
    const dirs: string[] = [];
    for (const name of MODELS) dirs.push(...(await roundTrip(name)).dirs);
    const script = `
import json, sys
try:
    import torchvision  # noqa: F401  (a torchvision built for another torch breaks transformers' import)
except Exception:
    sys.modules["torchvision"] = None
from transformers import AutoConfig
out = []
for d in sys.argv[1:]:
    c = AutoConfig.from_pretrained(d)
    out.append([c.model_type, getattr(c, "router_jitter_noise", None), getattr(c, "final_logit_softcapping", None)])
print(json.dumps(out))
`;
    const res = JSON.parse((await runPython(py!.exe, script, { args: dirs, timeout: 290_000 })).trim().split('\n').pop()!) as Array<[string, number | null, number | null]>;
    expect(res.map((r) => r[0])).toEqual(['mixtral', 'mixtral', 'gemma2', 'gemma2']);
    expect(res[0]![1]).toBe(0);
    expect(res[2]![2]).toBe(30);
  });
});
