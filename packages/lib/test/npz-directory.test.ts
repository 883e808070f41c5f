/**
 * A model directory whose only weight file is one `.npz` (mlx examples save `weights.npz` beside
 * config.json) is that file for every path-based entry point: the rule lives in npz's directory
 * sniff (packages/npz/src/directory.ts), not in the MLX commands. Two weight files are refused
 * by name; a transformers layout file (model.safetensors, an index) keeps precedence.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TensorportError, type TensorDescriptor } from '@tensorport/core';
import { FileSink } from '@tensorport/core/node';
import { writeNpz } from '@tensorport/npz';
import { convertPath, inspectPath, openPath, validatePath } from '../src/node/index.ts';

const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

function tensor(name: string, values: number[]): TensorDescriptor {
  const data = new Uint8Array(new Float32Array(values).buffer);
  return {
    name,
    dtype: 'F32',
    shape: [values.length],
    byteLength: data.byteLength,
    async *chunks() {
      yield data;
    },
  };
}

async function npzAt(path: string, tensors: TensorDescriptor[]): Promise<void> {
  await writeNpz(tensors, await FileSink.create(path));
}

/** An mlx examples model directory: weights.npz, config.json, a tokenizer file. */
async function mlxExampleDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tensorport-npzdir-'));
  dirs.push(dir);
  await npzAt(join(dir, 'weights.npz'), [tensor('a.weight', [1, 2, 3, 4]), tensor('b.bias', [0.5])]);
  await writeFile(join(dir, 'config.json'), '{"model_type": "llama"}\n');
  await writeFile(join(dir, 'tokenizer.json'), '{}\n');
  return dir;
}

async function refusal(p: Promise<unknown>): Promise<TensorportError> {
  const e = await p.then(() => null, (x: unknown) => x);
  expect(e).toBeInstanceOf(TensorportError);
  return e as TensorportError;
}

describe('a directory holding one .npz', () => {
  it('inspects as that file', async () => {
    const dir = await mlxExampleDir();
    const r = await inspectPath(dir);
    expect(r.format).toBe('npz');
    expect(r.tensors.map((t) => t.name)).toEqual(['a.weight', 'b.bias']);
    expect(r.files.map((f) => f.path)).toEqual([join(dir, 'weights.npz')]);
  });

  it('converts to a safetensors file with the same values, and to a directory carrying its side files', async () => {
    const dir = await mlxExampleDir();
    const out = join(dir, '..', `${dir.split('/').pop()}-out.safetensors`);
    dirs.push(out);
    const r = await convertPath({ input: dir, output: out, fsync: false });
    expect(r.from).toBe('npz');
    expect(r.tensors).toBe(2);
    const back = await openPath(out);
    try {
      const a = back.checkpoint.tensors.find((t) => t.name === 'a.weight')!;
      const chunks: Uint8Array[] = [];
      for await (const c of a.chunks()) chunks.push(c);
      expect([...new Float32Array(Uint8Array.from(Buffer.concat(chunks)).buffer)]).toEqual([1, 2, 3, 4]);
    } finally {
      await back.checkpoint.close();
    }
    const outDir = join(dir, 'converted');
    const d = await convertPath({ input: dir, output: `${outDir}/`, fsync: false });
    expect(d.copied.sort()).toEqual(['config.json', 'tokenizer.json']);
    expect(await readFile(join(outDir, 'config.json'), 'utf8')).toBe('{"model_type": "llama"}\n');
  });

  it('any name, without config.json: a lone model.npz is the directory too', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tensorport-npzdir-'));
    dirs.push(dir);
    await npzAt(join(dir, 'model.npz'), [tensor('x', [1, 2])]);
    const r = await inspectPath(dir);
    expect(r.format).toBe('npz');
    expect(r.files.map((f) => f.path)).toEqual([join(dir, 'model.npz')]);
  });

  it('validates that file', async () => {
    const dir = await mlxExampleDir();
    const v = await validatePath(dir);
    expect(v.valid).toBe(true);
    expect(v.format).toBe('npz');
    expect(v.files).toEqual([join(dir, 'weights.npz')]);
  });
});

describe('a directory with more than one weight file', () => {
  it('two .npz: UnknownFormat naming both, from open and from validate', async () => {
    const dir = await mlxExampleDir();
    await npzAt(join(dir, 'adapters.npz'), [tensor('lora_a', [1])]);
    const e = await refusal(inspectPath(dir));
    expect(e.code).toBe('UnknownFormat');
    expect(e.message).toContain('adapters.npz, weights.npz');
    const c = await refusal(convertPath({ input: dir, output: join(dir, 'x.safetensors'), fsync: false }));
    expect(c.code).toBe('UnknownFormat');
    const v = await validatePath(dir);
    expect(v.valid).toBe(false);
    expect(v.errors[0]!.code).toBe('UnknownFormat');
    expect(v.errors[0]!.message).toContain('adapters.npz, weights.npz');
  });

  it('weights.npz beside a safetensors file no layout names: UnknownFormat naming both', async () => {
    const dir = await mlxExampleDir();
    await convertPath({ input: join(dir, 'weights.npz'), output: join(dir, 'adapters.safetensors'), fsync: false });
    const e = await refusal(inspectPath(dir));
    expect(e.code).toBe('UnknownFormat');
    expect(e.message).toContain('adapters.safetensors, weights.npz');
  });

  it('weights.npz beside model.safetensors: the transformers layout file is the checkpoint', async () => {
    const dir = await mlxExampleDir();
    const other = join(dir, 'src');
    await mkdir(other);
    await npzAt(join(other, 'w.npz'), [tensor('only', [7])]);
    await convertPath({ input: join(other, 'w.npz'), output: join(dir, 'model.safetensors'), fsync: false });
    await rm(other, { recursive: true });
    const r = await inspectPath(dir);
    expect(r.format).toBe('safetensors');
    expect(r.tensors.map((t) => t.name)).toEqual(['only']);
  });

  it('a directory without any weight file still names what it expected', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tensorport-npzdir-'));
    dirs.push(dir);
    await writeFile(join(dir, 'config.json'), '{}');
    const e = await refusal(inspectPath(dir));
    expect(e.code).toBe('UnknownFormat');
    expect(e.message).toContain('one *.npz');
  });
});
