/**
 * An mlx examples model directory (one weights.npz beside config.json) through the built CLI:
 * plain `convert` and `inspect` read it as the MLX commands do (the rule is npz's directory sniff,
 * not a retry in the MLX commands), and a directory with two weight files is refused naming both.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FileSink } from '@tensorport/core/node';
import { writeNpz } from '@tensorport/npz';
import { describe, expect, it } from 'vitest';
import { listDir, tempDir, tensorDigests, tensorport } from './helpers.ts';

function f32(name: string, shape: number[]) {
  const n = shape.reduce((a, b) => a * b, 1);
  const data = new Uint8Array(Float32Array.from({ length: n }, (_, i) => Math.sin(i) / 8).buffer);
  return {
    name,
    dtype: 'F32' as const,
    shape,
    byteLength: data.byteLength,
    async *chunks() {
      yield data;
    },
  };
}

async function exampleDir(): Promise<string> {
  const dir = join(await tempDir(), 'mlx_model');
  await mkdir(dir);
  await writeNpz([f32('layers.0.attention.wq.weight', [8, 64]), f32('norm.weight', [64])], await FileSink.create(join(dir, 'weights.npz')));
  await writeFile(join(dir, 'config.json'), '{"model_type": "llama", "dim": 64}\n');
  await writeFile(join(dir, 'tokenizer.model'), 'tok');
  return dir;
}

describe('a directory holding weights.npz beside config.json', () => {
  it('convert DIR out.safetensors and inspect DIR read weights.npz', async () => {
    const dir = await exampleDir();
    const out = join(dir, '..', 'out.safetensors');
    const c = await tensorport('convert', dir, out);
    expect(c.stderr).toBe('');
    expect(c.code).toBe(0);
    const d = await tensorDigests(out);
    expect([...d.keys()].sort()).toEqual(['layers.0.attention.wq.weight', 'norm.weight']);
    const i = await tensorport('inspect', dir, '--json');
    expect(i.code).toBe(0);
    const r = JSON.parse(i.stdout) as { format: string; tensors: { name: string }[]; files: { path: string }[] };
    expect(r.format).toBe('npz');
    expect(r.tensors.map((t) => t.name)).toEqual(['layers.0.attention.wq.weight', 'norm.weight']);
    expect(r.files.map((f) => f.path)).toEqual([join(dir, 'weights.npz')]);
  });

  it('quantize DIR out/ reads it as a directory input: config.json edited, side files carried', async () => {
    const dir = await exampleDir();
    const out = join(dir, '..', 'q');
    const q = await tensorport('quantize', dir, `${out}/`, '--json');
    expect(q.stderr).toBe('');
    expect(q.code).toBe(0);
    const j = JSON.parse(q.stdout) as { copied: string[]; quantization: { layer: string }[] };
    expect(j.copied).toEqual(['tokenizer.model']);
    expect(j.quantization.length).toBe(1);
    expect(await listDir(out)).toEqual(['config.json', 'model.safetensors', 'model.safetensors.index.json', 'tokenizer.model']);
  });

  it('two .npz in the directory: UnknownFormat naming both, nothing written', async () => {
    const dir = await exampleDir();
    await writeNpz([f32('lora_a', [4])], await FileSink.create(join(dir, 'adapters.npz')));
    for (const args of [['convert', dir, join(dir, 'x.safetensors')], ['inspect', dir], ['quantize', dir, join(dir, 'q.safetensors')]]) {
      const r = await tensorport(...args);
      expect(r.code, args[0]).toBe(1);
      expect(r.stderr, args[0]).toMatch(/^tensorport: UnknownFormat: .*\(adapters\.npz, weights\.npz\)/);
    }
    expect(await listDir(dir)).toEqual(['adapters.npz', 'config.json', 'tokenizer.model', 'weights.npz']);
  });
});
