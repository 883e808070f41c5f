import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { inspectFiles } from '../src/inspect/index.ts';
import { fileOf } from './helpers/files.ts';

const py = await requirePython(['torch']);
const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

describe.skipIf(!py)('a dropped sharded pytorch_model*.bin folder (issue 11 item 9)', () => {
  test('is read as a torch checkpoint through the library, every shard scanned, not as broken safetensors', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tensorport-web-'));
    dirs.push(dir);
    const out = await runPython(py!.exe, `
import sys, json, os, torch
d = sys.argv[1]
torch.manual_seed(0)
sd = {f"layers.{i}.weight": torch.randn(256, 256) for i in range(3)}
sd["head.bias"] = torch.arange(5, dtype=torch.int64)
names = sorted(sd)
wm = {}
for i, part in enumerate([names[:2], names[2:]]):
    f = f"pytorch_model-{i+1:05d}-of-00002.bin"
    torch.save({k: sd[k] for k in part}, os.path.join(d, f))
    wm.update({k: f for k in part})
json.dump({"metadata": {"total_size": 0}, "weight_map": wm}, open(os.path.join(d, "pytorch_model.bin.index.json"), "w"))
json.dump({"model_type": "test"}, open(os.path.join(d, "config.json"), "w"))
print(json.dumps({k: list(v.shape) for k, v in sd.items()}))
`, { args: [dir] });
    const shapes = JSON.parse(out) as Record<string, number[]>;
    const files = await Promise.all((await readdir(dir)).map((n) => fileOf(join(dir, n))));
    const r = await inspectFiles(files);
    expect(r.errors).toEqual([]);
    expect(r.format).toBe('torch-sharded');
    expect(Object.fromEntries(r.tensors.map((t) => [t.name, t.shape]))).toEqual(shapes);
    expect(r.files.filter((f) => f.role === 'data').map((f) => f.name).sort()).toEqual(['pytorch_model-00001-of-00002.bin', 'pytorch_model-00002-of-00002.bin']);
    // Headers and pickles only: far less than the files hold.
    expect(r.bytesRead).toBeLessThan(r.totalBytes);

    // A missing shard is named, as in the CLI.
    const missing = await inspectFiles(files.filter((f) => !f.name.startsWith('pytorch_model-00002')));
    expect(missing.valid).toBe(false);
    expect(missing.errors[0]).toMatchObject({ code: 'ShardMissing', path: 'pytorch_model-00002-of-00002.bin' });
  });
});
