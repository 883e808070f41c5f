import { copyFile, readFile, truncate, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { TensorportError } from '@tensorport/core';
import { describe, expect, it } from 'vitest';
import { FORMATS, convert, inspect, main, validate, type FormatHandler } from '../src/index.ts';
import { FIXTURES, listDir, manifest, tempDir } from './helpers.ts';

const transformer = join(FIXTURES, 'transformer_shard.safetensors');

describe('convert() (programmatic)', () => {
  it('returns the files written, tensor count, bytes and the cast count, and reports progress up to the total', async () => {
    const dir = await tempDir();
    const progress: Array<[number, number]> = [];
    const result = await convert({ input: transformer, output: `${dir}/`, dtype: 'f32', maxShardSize: 10_000, onProgress: (d, t) => progress.push([d, t]) });
    const m = await manifest('transformer_shard.safetensors');
    expect(result.tensors).toBe(m.tensors.length);
    expect(result.cast).toBe(m.tensors.length);
    expect(result.from).toBe('safetensors');
    expect(result.files.map((f) => f.slice(dir.length + 1)).sort()).toEqual(await listDir(dir));
    let bytes = 0;
    for (const f of result.files) bytes += (await stat(f)).size;
    expect(result.bytes).toBe(bytes);
    expect(progress.length).toBeGreaterThan(1);
    for (let i = 1; i < progress.length; i++) expect(progress[i]![0]).toBeGreaterThanOrEqual(progress[i - 1]![0]);
    expect(progress.at(-1)).toEqual([bytes, bytes]);
  });

  it('rejects with a TensorportError (and never exits the process) when it cannot convert', async () => {
    const dir = await tempDir();
    const input = join(dir, 'cut.safetensors');
    await copyFile(transformer, input);
    await truncate(input, 100);
    await expect(convert({ input, output: join(dir, 'out.safetensors') })).rejects.toMatchObject({ code: 'InvalidHeaderLength' });
    await expect(convert({ input: transformer, output: join(dir, 'x.safetensors'), dtype: 'f8' as 'f16' })).rejects.toBeInstanceOf(TensorportError);
    await expect(convert({ input: transformer, output: join(dir, 'x.safetensors'), maxShardSize: 1000 })).rejects.toMatchObject({ code: 'InvalidOption' });
    expect(await listDir(dir)).toEqual(['cut.safetensors']);
  });
});

describe('convert() verifies what it wrote', () => {
  it('removes the written files when the output fails validation', async () => {
    const dir = await tempDir();
    const safetensors = FORMATS[0]!;
    // A writer whose output always fails its validator (e.g. a writer bug): convert must not leave it.
    const broken: FormatHandler = {
      ...safetensors,
      name: 'broken-for-test',
      validate: async (path) => ({ valid: false, errors: [{ code: 'InvalidOffset', message: 'planted', path, tensor: 'x', offset: 8 }], warnings: [], files: [path] }),
    };
    (FORMATS as FormatHandler[]).push(broken);
    try {
      await expect(convert({ input: transformer, output: `${dir}/`, to: 'broken-for-test', maxShardSize: 10_000 })).rejects.toMatchObject({
        code: 'InvalidOffset',
        tensor: 'x',
        message: expect.stringContaining('failed validation: planted'),
      });
      await expect(convert({ input: transformer, output: join(dir, 'one.safetensors'), to: 'broken-for-test' })).rejects.toMatchObject({ code: 'InvalidOffset' });
    } finally {
      (FORMATS as FormatHandler[]).pop();
    }
    expect(await listDir(dir)).toEqual([]);
  });
});

describe('inspect() and validate() (programmatic)', () => {
  it('give the --json shapes', async () => {
    const file = join(FIXTURES, 'scalars.safetensors');
    const report = await inspect(file);
    expect(Object.keys(report).sort()).toEqual(['files', 'format', 'metadata', 'path', 'tensors', 'totals', 'warnings']);
    for (const t of report.tensors) expect(Object.keys(t).sort()).toEqual(['bytes', 'dtype', 'file', 'name', 'offsets', 'shape']);
    // Scalars (shape []) count one parameter each.
    expect(report.totals.parameters).toBe(report.tensors.length);
    const v = await validate(file);
    expect(v).toMatchObject({ path: file, format: 'safetensors', valid: true, errors: [], files: [file] });
  });
});

describe('main() with a TTY-like stderr', () => {
  it('prints nothing but the JSON on stdout with --json', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(['inspect', transformer, '--json'], { stdout: { write: (s: string) => out.push(s) }, stderr: { isTTY: true, write: (s: string) => err.push(s) } });
    expect(code).toBe(0);
    expect(err).toEqual([]);
    expect(JSON.parse(out.join('')).tensors).toHaveLength(30);
  });
});

describe('format registry', () => {
  it('has one entry per format, each with detect and open', async () => {
    expect(FORMATS.map((f) => f.name)).toEqual(['safetensors', 'torch', 'npz', 'npy']);
    const st = FORMATS[0]!;
    expect(st.detect({ path: 'a.bin', isDirectory: false, content: 'safetensors', entries: [] })).toBe(true);
    expect(st.detect({ path: 'a.safetensors', isDirectory: false, content: 'zip', entries: [] })).toBe(false);
    expect(st.detect({ path: 'd', isDirectory: true, content: null, entries: ['config.json', 'model.safetensors.index.json'] })).toBe(true);
    expect(st.detect({ path: 'd', isDirectory: true, content: null, entries: ['pytorch_model.bin'] })).toBe(false);
    const cp = await st.open(transformer);
    expect(cp.tensors.map((t) => t.name).sort()).toEqual(JSON.parse(await readFile(`${transformer}.manifest.json`, 'utf8')).tensors.map((t: { name: string }) => t.name).sort());
    await cp.close();
  });
});
