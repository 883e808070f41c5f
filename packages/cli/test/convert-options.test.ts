import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { FORMATS, convertPath as convert, createRegistry, type AnyFormat } from '../src/node.ts';
import { FIXTURES, fileSha256, listDir, tempDir, tensorDigests } from './helpers.ts';
import { runInProcess as run } from './in-process.ts';

const transformer = join(FIXTURES, 'transformer_shard.safetensors');
const minimal = join(FIXTURES, 'minimal.safetensors');

describe('output formats: the extension names one tensorport writes, or --to does', () => {
  it('.onnx, .h5, .foo and an extensionless path are refused (exit 2) naming the formats and --to; nothing is written', async () => {
    const dir = await tempDir();
    for (const name of ['model.onnx', 'model.h5', 'model.foo', 'model']) {
      const r = await run('convert', minimal, join(dir, name));
      expect(r.code, name).toBe(2);
      expect(r.stderr, name).toMatch(/^tensorport: usage: /);
      expect(r.stderr, name).toMatch(name === 'model' ? /has no extension/ : /cannot write '\.[a-z0-9]+' files/);
      for (const named of ['safetensors (.safetensors)', 'npz (.npz)', 'npy (.npy)', '.pt', 'gguf (.gguf)', '--to']) expect(r.stderr, name).toContain(named);
    }
    expect(await listDir(dir)).toEqual([]);
  });

  it('--to picks the writer whatever the name: model.foo --to npz is an npz, model --to safetensors the same bytes as model.safetensors', async () => {
    const dir = await tempDir();
    expect((await run('convert', transformer, join(dir, 'ref.safetensors'))).code).toBe(0);
    const st = await run('convert', transformer, join(dir, 'model'), '--to', 'safetensors');
    expect(st.code, st.stderr).toBe(0);
    expect(await fileSha256(join(dir, 'model'))).toBe(await fileSha256(join(dir, 'ref.safetensors')));
    const npz = await run('convert', transformer, join(dir, 'model.foo'), '--to', 'NPZ', '--json');
    expect(npz.code, npz.stderr).toBe(0);
    expect(JSON.parse(npz.stdout)).toMatchObject({ to: 'npz' });
    const bytes = await readFile(join(dir, 'model.foo'));
    expect(bytes.subarray(0, 4)).toEqual(Buffer.from('PK\x03\x04', 'latin1'));
    const bad = await run('convert', transformer, join(dir, 'x.safetensors'), '--to', 'onnx');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/'--to <format>' argument 'onnx' is invalid\. expected one of safetensors, torch, npz, npy, gguf/);
  });
});

describe('--metadata KEY=VALUE', () => {
  it('malformed pairs and a format without metadata are usage errors (exit 2); nothing is written', async () => {
    const dir = await tempDir();
    const cases: Array<[string[], RegExp]> = [
      [['--metadata', 'novalue'], /expected KEY=VALUE/],
      [['--metadata', '=x'], /expected KEY=VALUE/],
      [['--metadata', 'a=1', '--metadata', 'a=2'], /the key 'a' is given twice/],
      [['--metadata', '__metadata__=x'], /__metadata__/],
    ];
    for (const [flags, pattern] of cases) {
      const r = await run('convert', minimal, join(dir, 'o.safetensors'), ...flags);
      expect(r.code, flags.join(' ')).toBe(2);
      expect(r.stderr, flags.join(' ')).toMatch(pattern);
    }
    for (const out of ['o.npz', 'o.pt', 'o.npy']) {
      const r = await run('convert', minimal, join(dir, out), '--metadata', 'a=1');
      expect(r.code, out).toBe(2);
      expect(r.stderr, out).toMatch(/metadata entries need a safetensors output/);
    }
    expect(await listDir(dir)).toEqual([]);
  });
});

const py = await requirePython(['safetensors', 'numpy']);

describe.skipIf(!py)('--metadata read back by the Python safetensors package', () => {
  it('entries land in __metadata__ of a file and of every shard; a value may hold "="; format=mlx replaces the input\'s format=pt', async () => {
    const dir = await tempDir();
    const file = join(dir, 'one.safetensors');
    const shards = join(dir, 'shards') + '/';
    const flags = ['--metadata', 'license=mit', '--metadata', 'note=a=b c', '--metadata', 'format=mlx'];
    expect((await run('convert', minimal, file, ...flags)).code).toBe(0);
    const s = await run('convert', transformer, shards, '--max-shard-size', '10KB', ...flags);
    expect(s.code, s.stderr).toBe(0);
    const names = (await listDir(shards)).filter((n) => n.endsWith('.safetensors'));
    expect(names.length).toBeGreaterThan(1);
    const out = await runPython(py!.exe, `
import sys, json
from safetensors import safe_open
res = []
for p in sys.argv[1:]:
    with safe_open(p, "np") as f:
        res.append(f.metadata())
print(json.dumps(res))
`, { args: [file, ...names.map((n) => join(shards, n))] });
    const metas = JSON.parse(out) as Array<Record<string, string>>;
    expect(metas).toHaveLength(1 + names.length);
    for (const m of metas) expect(m).toMatchObject({ license: 'mit', note: 'a=b c', format: 'mlx' });
  });
});

describe('--jobs', () => {
  it('shards written 3 at a time are byte for byte those written one at a time', async () => {
    const dir = await tempDir();
    const one = join(dir, 'one') + '/';
    const three = join(dir, 'three') + '/';
    expect((await run('convert', transformer, one, '--max-shard-size', '5KB', '--jobs', '1')).code).toBe(0);
    const r = await run('convert', transformer, three, '--max-shard-size', '5KB', '--jobs', '3');
    expect(r.code, r.stderr).toBe(0);
    const files = await listDir(one);
    expect(files.filter((f) => f.endsWith('.safetensors')).length).toBeGreaterThan(3);
    expect(await listDir(three)).toEqual(files);
    for (const f of files) expect(await fileSha256(join(three, f)), f).toBe(await fileSha256(join(one, f)));
    const input = await tensorDigests(transformer);
    const back = await tensorDigests(three);
    expect([...back.keys()].sort()).toEqual([...input.keys()].sort());
    for (const [name, t] of input) expect(back.get(name)?.sha256, name).toBe(t.sha256);
  });

  it('jobs and metadata reach the safetensors writer (a registry whose safetensors writer records its options)', async () => {
    const seen: unknown[] = [];
    const st = FORMATS.find((f) => f.name === 'safetensors')!;
    const recording: AnyFormat = { ...st, write: (tensors, metadata, target, options) => (seen.push(options), st.write!(tensors, metadata, target, options)) };
    const registry = createRegistry([recording, ...FORMATS.filter((f) => f !== st)]);
    const dir = await tempDir();
    await convert({ input: transformer, output: `${dir}/`, maxShardSize: 5000, jobs: 3, metadata: { a: 'b' }, registry, fsync: false });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ jobs: 3, maxShardSize: 5000, metadata: { a: 'b' } });
  });

  it('0, -1, 1.5 and words are usage errors', async () => {
    const dir = await tempDir();
    for (const bad of ['0', '-1', '1.5', 'many']) {
      const r = await run('convert', transformer, `${dir}/`, '--jobs', bad);
      expect(r.code, bad).toBe(2);
      expect(r.stderr, bad).toMatch(/'--jobs <n>' argument .* is invalid/);
    }
    expect(existsSync(join(dir, 'model.safetensors'))).toBe(false);
  });
});
