import { copyFile, mkdir, readFile, stat, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { TensorportError } from '@tensorport/core';
import { describe, expect, it } from 'vitest';
import { FORMATS, convertPath as convert, createRegistry, inspectPath as inspect, validatePath as validate, type AnyFormat } from '../src/node.ts';
import { main } from '../src/cli.ts';
import { pathContext } from '@tensorport/lib/node';
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
    const broken: AnyFormat = {
      ...safetensors,
      name: 'broken-for-test',
      validate: async (ctx) => ({ valid: false, errors: [{ code: 'InvalidOffset', message: 'planted', path: ctx.name, tensor: 'x', offset: 8 }], warnings: [], files: [ctx.name] }),
    };
    // Tests inject their own registry instead of changing the default one.
    const registry = createRegistry([...FORMATS, broken]);
    await expect(convert({ input: transformer, output: `${dir}/`, to: 'broken-for-test', maxShardSize: 10_000, registry })).rejects.toMatchObject({
      code: 'InvalidOffset',
      tensor: 'x',
      message: expect.stringContaining('failed validation: planted'),
    });
    await expect(convert({ input: transformer, output: join(dir, 'one.safetensors'), to: 'broken-for-test', registry })).rejects.toMatchObject({ code: 'InvalidOffset' });
    expect(FORMATS.map((f) => f.name)).not.toContain('broken-for-test');
    expect(await listDir(dir)).toEqual([]);
  });
});

describe('inspect() and validate() (programmatic)', () => {
  it('give the --json shapes', async () => {
    const file = join(FIXTURES, 'scalars.safetensors');
    const report = await inspect(file);
    expect(Object.keys(report).sort()).toEqual(['aliases', 'files', 'format', 'metadata', 'path', 'tensors', 'totals', 'warnings']);
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
  it('has one entry per format, each with sniff and open over a context', async () => {
    expect(FORMATS.map((f) => f.name)).toEqual(['safetensors', 'torch', 'npz', 'npy', 'gguf']);
    const st = FORMATS[0]!;
    const sniff = async (path: string) => {
      const ctx = await pathContext(path);
      try {
        return await st.sniff(ctx);
      } finally {
        await ctx.close();
      }
    };
    // Content decides, not the name: a .bin holding safetensors is safetensors, an .npz is not.
    const dir = await tempDir();
    await copyFile(transformer, join(dir, 'a.bin'));
    expect(await sniff(join(dir, 'a.bin'))).toBe(true);
    expect(await sniff(join(FIXTURES, '../npz/npz/savez.npz'))).toBe(false);
    expect(await sniff(join(FIXTURES, 'sharded'))).toBe(true);
    await mkdir(join(dir, 'torchdir'));
    await writeFile(join(dir, 'torchdir', 'pytorch_model.bin'), 'x');
    expect(await sniff(join(dir, 'torchdir'))).toBe(false);
    const ctx = await pathContext(transformer);
    const cp = await st.open(ctx);
    expect(cp.tensors.map((t) => t.name).sort()).toEqual(JSON.parse(await readFile(`${transformer}.manifest.json`, 'utf8')).tensors.map((t: { name: string }) => t.name).sort());
    await cp.close();
    await ctx.close();
  });
});
