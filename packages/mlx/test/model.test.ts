import { describe, expect, it } from 'vitest';
import { MemorySink, BytesSource, openSafetensors, type ByteSink } from '@tensorport/core';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { formatConfigJson, planMlxShards, pyFloat, pythonJson, quantizeCheckpoint, totalParameters, writeMlxModel, findQuantizedLayers } from '../src/index.ts';
import { collect, floatTensor, memTensor } from './helpers/memory.ts';

const py = await requirePython(['numpy', 'safetensors']);

function model() {
  const tensors = [
    floatTensor('model.embed_tokens.weight', 'BF16', [8, 64], new Array(512).fill(0).map((_, i) => Math.sin(i) / 10)),
    floatTensor('model.layers.0.q_proj.weight', 'BF16', [16, 64], new Array(1024).fill(0).map((_, i) => Math.cos(i) / 10)),
    floatTensor('model.layers.0.q_proj.bias', 'BF16', [16], new Array(16).fill(0.5)),
    floatTensor('model.norm.weight', 'BF16', [64], new Array(64).fill(1)),
  ];
  return quantizeCheckpoint({ tensors }, { bits: 4, groupSize: 32, config: { model_type: 'toy', rms_norm_eps: 1e-6, rope_theta: 10000, name: 'café' } });
}

async function writeToMemory(result: ReturnType<typeof model>, maxShardBytes?: number) {
  const sinks = new Map<string, MemorySink>();
  const progress: [number, number][] = [];
  const written = await writeMlxModel(result, async (name) => {
    const s = new MemorySink(name);
    sinks.set(name, s);
    return s as ByteSink;
  }, { ...(maxShardBytes === undefined ? {} : { maxShardBytes }), onProgress: (done, total) => progress.push([done, total]) });
  const files = new Map([...sinks].map(([k, s]) => [k, s.bytes()]));
  // Progress is monotonic against one total, which is what was written.
  const total = [...files.values()].reduce((n, b) => n + b.byteLength, 0);
  expect(written.bytes).toBe(total);
  expect(progress.every(([d, t], i) => t === total && (i === 0 || d >= progress[i - 1]![0]))).toBe(true);
  expect(progress[progress.length - 1]![0]).toBe(total);
  return { written, files };
}

describe('mlx-lm model layout', () => {
  it('shards greedily in tensor order, never leaving an empty shard', () => {
    const t = (name: string, n: number) => memTensor(name, 'U8', [n], new Uint8Array(n));
    const plans = planMlxShards([t('a', 60), t('b', 50), t('c', 200), t('d', 10)], 100);
    expect(plans.map((p) => [p.fileName, p.tensors.map((x) => x.name), p.dataLength])).toEqual([
      ['model-00001-of-00004.safetensors', ['a'], 60],
      ['model-00002-of-00004.safetensors', ['b'], 50],
      ['model-00003-of-00004.safetensors', ['c'], 200],
      ['model-00004-of-00004.safetensors', ['d'], 10],
    ]);
    expect(planMlxShards([t('a', 1)]).map((p) => p.fileName)).toEqual(['model.safetensors']);
  });

  it('counts parameters as mlx-lm: quantized weights × 32 / bits, scales and biases not at all', () => {
    const r = model();
    expect(totalParameters(r.tensors, r.layers)).toBe(8 * 64 + 16 * 64 + 16 + 64);
  });

  it('writes shards, an index (always) and config.json; all read back', async () => {
    const r = model();
    const { written, files } = await writeToMemory(r, 600);
    expect(written.files).toEqual(['model-00001-of-00003.safetensors', 'model-00002-of-00003.safetensors', 'model-00003-of-00003.safetensors', 'model.safetensors.index.json', 'config.json']);
    const index = JSON.parse(new TextDecoder().decode(files.get('model.safetensors.index.json')));
    expect(Object.keys(index.weight_map)).toEqual([...r.tensors.map((t) => t.name)].sort());
    expect(index.metadata.total_parameters).toBe(totalParameters(r.tensors, r.layers));
    let total = 0;
    const seen: string[] = [];
    for (const name of written.files.slice(0, 3)) {
      const shard = await openSafetensors(new BytesSource(files.get(name)!, name));
      expect(Object.fromEntries(shard.metadata!)).toEqual({ format: 'mlx', quantization_bits: '4', quantization_group_size: '32' });
      for (const t of shard.tensors) {
        expect(index.weight_map[t.name]).toBe(name);
        const orig = r.tensors.find((x) => x.name === t.name)!;
        expect(await shard.read(t.name)).toEqual(await collect(orig));
        total += t.byteLength;
        seen.push(t.name);
      }
    }
    expect(index.metadata.total_size).toBe(total);
    expect(seen.sort()).toEqual(Object.keys(index.weight_map));
    const config = JSON.parse(new TextDecoder().decode(files.get('config.json')));
    expect(config.quantization).toEqual({ group_size: 32, bits: 4, mode: 'affine' });
    expect(config.quantization_config).toEqual(config.quantization);
    // The written model is recognised from its own config.
    const layers = findQuantizedLayers({ tensors: r.tensors }, { config, metadata: null });
    expect(layers.map((l) => [l.path, l.bits, l.groupSize, l.source])).toEqual([['model.embed_tokens', 4, 32, 'config'], ['model.layers.0.q_proj', 4, 32, 'config']]);
  });

  it('a failing tensor aborts every file: nothing is committed', async () => {
    const bad = memTensor('z.weight', 'F32', [1], new Uint8Array(4));
    const broken = { ...bad, chunks: async function* () { yield new Uint8Array(2); throw new Error('disk gone'); } };
    const states: string[] = [];
    const sink = (name: string): ByteSink => ({
      name,
      bytesWritten: 0,
      write: async () => {},
      commit: async () => void states.push(`commit ${name}`),
      abort: async () => void states.push(`abort ${name}`),
    });
    const r = model();
    await expect(writeMlxModel({ ...r, tensors: [...r.tensors, broken] }, async (n) => sink(n), { maxShardBytes: 600 })).rejects.toThrow('disk gone');
    expect(states.every((s) => s.startsWith('abort'))).toBe(true);
    expect(states.length).toBeGreaterThan(0);
  });

  it('Python float repr', () => {
    expect([1e-6, 1e-5, 0.0001, 0.02, 1.5, 123.456, -0.0001, 1e16 + 2, 1.25e-7, 5e-324].map(pyFloat)).toEqual(['1e-06', '1e-05', '0.0001', '0.02', '1.5', '123.456', '-0.0001', '1.0000000000000002e+16', '1.25e-07', '5e-324']);
  });
});

describe.skipIf(!py)('what Python reads and writes', () => {
  it('index and config.json are byte-identical to json.dump(indent=4); shards load in safetensors', async () => {
    const r = model();
    const { files } = await writeToMemory(r, 600);
    const dec = (n: string) => new TextDecoder().decode(files.get(n));
    const script = `
import json, sys
from safetensors.numpy import load
index, config = sys.stdin.read().split('\\0')
print(json.dumps(json.loads(index), indent=4) == index)
c = json.loads(config)
print(json.dumps(dict(sorted(c.items())), indent=4) == config)
print(json.dumps([1e-6, 0.02, 1e16 + 2, 1.25e-7, 5e-324, 'caf\\u00e9\\x7f\\u2028']))
`;
    const out = (await runPython(py!.exe, script, { input: `${dec('model.safetensors.index.json')}\0${dec('config.json')}` })).trim().split('\n');
    expect(out.slice(0, 2)).toEqual(['True', 'True']);
    expect(out[2]).toBe(pythonJson([1e-6, 0.02, 1e16 + 2, 1.25e-7, 5e-324, 'café\x7f\u2028']).replace(/\n\s*/g, ' ').replace('[ ', '[').replace(' ]', ']'));
    expect(formatConfigJson({ b: 1, a: { z: [], y: {} }, _name_or_path: 'x' })).toBe('{\n    "a": {\n        "z": [],\n        "y": {}\n    },\n    "b": 1\n}');
  });
});
