import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { REPO, listDir, safetensorsFile, tempDir, tensorDigests, tensorport } from './helpers.ts';

const TORCH = join(REPO, 'fixtures/torch');
const py = await requirePython(['torch', 'safetensors']);

/** Facts the Python generator recorded from torch for each checkpoint: every tensor's bytes digest. */
const manifest = JSON.parse(await readFile(join(TORCH, 'checkpoints/manifest.json'), 'utf8')) as Record<string, { tensors: Record<string, { sha256: string; shape: number[] }> }>;

const f32 = (...xs: number[]) => new Uint8Array(new Float32Array(xs).buffer);

/** A sharded pytorch_model-*.bin directory made by the CLI from safetensors shards, with its index. */
async function shardedDir(dir: string, weightMap?: Record<string, string>): Promise<string> {
  const model = join(dir, 'model');
  await mkdir(model);
  const shards = {
    'pytorch_model-00001-of-00002.bin': { 'a.weight': { dtype: 'F32', shape: [2, 2], data: f32(1, 2, 3, 4) }, 'a.bias': { dtype: 'F32', shape: [2], data: f32(5, 6) } },
    'pytorch_model-00002-of-00002.bin': { 'b.weight': { dtype: 'F32', shape: [3], data: f32(7, 8, 9) } },
  };
  const map: Record<string, string> = {};
  for (const [file, tensors] of Object.entries(shards)) {
    await writeFile(join(dir, `${file}.safetensors`), safetensorsFile(tensors));
    const r = await tensorport('convert', join(dir, `${file}.safetensors`), join(model, file));
    expect(r.code, r.stderr).toBe(0);
    for (const name of Object.keys(tensors)) map[name] = file;
  }
  await writeFile(join(model, 'pytorch_model.bin.index.json'), JSON.stringify({ metadata: { total_size: 36 }, weight_map: weightMap ?? map }));
  return model;
}

describe('torch checkpoints through the CLI', () => {
  const fixtures = Object.keys(manifest).filter((f) => f.endsWith('.pt'));

  it.each(fixtures)('%s → safetensors (--keep-aliases): every tensor has the bytes torch recorded', async (file) => {
    const dir = await tempDir();
    const out = join(dir, 'out.safetensors');
    const r = await tensorport('convert', join(TORCH, 'checkpoints', file), out, '--keep-aliases');
    expect(r.code, r.stderr).toBe(0);
    const got = await tensorDigests(out);
    for (const [name, t] of Object.entries(manifest[file]!.tensors)) {
      expect(got.get(name)?.sha256, `${file}: ${name}`).toBe(t.sha256);
      expect(got.get(name)?.shape, `${file}: ${name}`).toEqual(t.shape);
    }
  });

  it('tied weights are written once by default, the other name recorded in metadata', async () => {
    const dir = await tempDir();
    const r = await tensorport('convert', join(TORCH, 'checkpoints/tied.pt'), join(dir, 't.safetensors'), '--json');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).tensors).toBe(Object.keys(manifest['tied.pt']!.tensors).length - 1);
  });

  it('--select keeps one subtree', async () => {
    const r = await tensorport('inspect', join(TORCH, 'checkpoints/nested.pt'), '--select', 'model', '--json');
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { tensors: Array<{ name: string }> }).tensors.map((t) => t.name).sort()).toEqual(['layer.bias', 'layer.weight']);
  });

  it('--select naming a value with no tensor (epoch) is refused, naming it; no empty file is written (issue 11)', async () => {
    const dir = await tempDir();
    const out = join(dir, 'e.safetensors');
    const r = await tensorport('convert', join(TORCH, 'checkpoints/nested.pt'), out, '--select', 'epoch');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('TensorNotFound');
    expect(r.stderr).toContain('select: "epoch" is an int, not a tensor');
    await expect(readFile(out)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('safetensors → .pt → safetensors gives the same file back, byte for byte; npz → .pt → npz keeps the tensors', async () => {
    const dir = await tempDir();
    const a = join(dir, 'a.safetensors');
    expect((await tensorport('convert', join(TORCH, 'checkpoints/transformers.pt'), a)).code).toBe(0);
    expect((await tensorport('convert', a, join(dir, 'mid.pt'))).code).toBe(0);
    expect((await tensorport('convert', join(dir, 'mid.pt'), join(dir, 'b.safetensors'))).code).toBe(0);
    expect(Buffer.compare(await readFile(a), await readFile(join(dir, 'b.safetensors')))).toBe(0);

    const npz = join(REPO, 'fixtures/npz/npz/savez.npz');
    expect((await tensorport('convert', npz, join(dir, 'n.pt'))).code).toBe(0);
    expect((await tensorport('convert', join(dir, 'n.pt'), join(dir, 'n.npz'))).code).toBe(0);
    expect((await tensorport('convert', npz, join(dir, 'n1.safetensors'))).code).toBe(0);
    expect((await tensorport('convert', join(dir, 'n.npz'), join(dir, 'n2.safetensors'))).code).toBe(0);
    expect(Buffer.compare(await readFile(join(dir, 'n1.safetensors')), await readFile(join(dir, 'n2.safetensors')))).toBe(0);
  });

  it('--dtype casts on the way from torch', async () => {
    const dir = await tempDir();
    const r = await tensorport('convert', join(TORCH, 'checkpoints/transformers.pt'), join(dir, 'bf16.safetensors'), '--dtype', 'bf16');
    expect(r.code, r.stderr).toBe(0);
    const dtypes = new Set([...(await tensorDigests(join(dir, 'bf16.safetensors'))).values()].map((t) => t.dtype));
    expect(dtypes.has('F32')).toBe(false);
    expect(dtypes.has('BF16')).toBe(true);
  });

  it.each([
    ['evil_os_system.pt', 'PickleDisallowedGlobal', 'posix.system'],
    ['evil_reduce_print.pt', 'PickleDisallowedGlobal', 'builtins.print'],
    ['evil_inst_print.pt', 'PickleDisallowedGlobal', 'builtins.print'],
    ['evil_persid_module.pt', 'PickleInvalid', "got 'module'"],
  ])('unsafe %s: convert writes nothing, exits 1 with %s naming %s; validate exits 1', async (file, code, what) => {
    const dir = await tempDir();
    const r = await tensorport('convert', join(TORCH, 'reference', file), join(dir, 'out.safetensors'));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(code);
    expect(r.stderr).toContain(what);
    expect(await listDir(dir)).toEqual([]);
    const v = await tensorport('validate', join(TORCH, 'reference', file));
    expect(v.code).toBe(1);
    expect(v.stdout).toContain(code);
  });

  it('validate: every torch fixture is valid (full scan and read)', async () => {
    for (const f of (await readdir(join(TORCH, 'checkpoints'))).filter((x) => x.endsWith('.pt'))) {
      const r = await tensorport('validate', join(TORCH, 'checkpoints', f), '--json');
      expect(r.code, `${f}: ${r.stdout}`).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ valid: true, format: 'torch' });
    }
  });

  it('a torch output needs a torch extension and is refused over an existing file without --force', async () => {
    const dir = await tempDir();
    const src = join(TORCH, 'checkpoints/legacy.pt');
    expect((await tensorport('convert', src, join(dir, 'x.pt'))).code).toBe(0);
    const again = await tensorport('convert', src, join(dir, 'x.pt'));
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/OutputExists/);
    expect((await tensorport('convert', src, join(dir, 'x.pt'), '--force')).code).toBe(0);
  });
});

describe('sharded pytorch_model-*.bin directories', () => {
  it('convert to safetensors shards re-planned by --max-shard-size, tensors unchanged', async () => {
    const dir = await tempDir();
    const model = await shardedDir(dir);
    const single = join(dir, 'single.safetensors');
    const r1 = await tensorport('convert', model, single);
    expect(r1.code, r1.stderr).toBe(0);
    const out = join(dir, 'out') + '/';
    const r2 = await tensorport('convert', model, out, '--max-shard-size', '20');
    expect(r2.code, r2.stderr).toBe(0);
    const files = await listDir(out);
    expect(files).toContain('model.safetensors.index.json');
    expect(files.filter((f) => f.endsWith('.safetensors')).length).toBeGreaterThan(1);
    const a = await tensorDigests(single);
    const b = await tensorDigests(out);
    expect([...b.keys()].sort()).toEqual(['a.bias', 'a.weight', 'b.weight']);
    for (const [name, t] of a) expect(b.get(name)?.sha256, name).toBe(t.sha256);
    expect(Buffer.compare(a.get('b.weight')!.bytes, f32(7, 8, 9))).toBe(0);
    const v = await tensorport('validate', model);
    expect(v.code, v.stdout).toBe(0);
  });

  it('a weight_map that disagrees with the shards is ShardMismatch, exit 1, nothing written', async () => {
    const dir = await tempDir();
    const model = await shardedDir(dir, { 'a.weight': 'pytorch_model-00002-of-00002.bin', 'a.bias': 'pytorch_model-00001-of-00002.bin', 'b.weight': 'pytorch_model-00002-of-00002.bin' });
    const out = join(dir, 'out.safetensors');
    const r = await tensorport('convert', model, out);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/ShardMismatch.*a\.weight/);
    expect(await listDir(dir)).not.toContain('out.safetensors');
    expect((await tensorport('validate', model)).code).toBe(1);
  });

  it('an unsafe shard stops the whole conversion, naming its global', async () => {
    const dir = await tempDir();
    const model = await shardedDir(dir);
    await writeFile(join(model, 'pytorch_model-00002-of-00002.bin'), await readFile(join(TORCH, 'reference/evil_os_system.pt')));
    const r = await tensorport('convert', model, join(dir, 'out.safetensors'));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('posix.system');
    expect(await listDir(dir)).not.toContain('out.safetensors');
  });
});

describe.skipIf(!py)('interop with torch', () => {
  it('torch.load(weights_only=True) reads our .pt with the tensors safetensors reads from the source', async () => {
    const dir = await tempDir();
    const src = join(dir, 'src.safetensors');
    expect((await tensorport('convert', join(TORCH, 'checkpoints/dtypes.pt'), src)).code).toBe(0);
    expect((await tensorport('convert', src, join(dir, 'ours.pt'))).code).toBe(0);
    const out = await runPython(py!.exe, `
import sys, json, torch
from safetensors.torch import load_file
a = load_file(sys.argv[1])
b = torch.load(sys.argv[2], weights_only=True)
bad = [k for k in a if k not in b or a[k].dtype != b[k].dtype or a[k].shape != b[k].shape or not torch.equal(a[k].reshape(-1).view(torch.uint8), b[k].reshape(-1).view(torch.uint8))]
print(json.dumps({"n": len(a), "same_names": sorted(a) == sorted(b), "bad": bad}))
`, { args: [src, join(dir, 'ours.pt')] });
    const r = JSON.parse(out) as { n: number; same_names: boolean; bad: string[] };
    expect(r).toEqual({ n: expect.any(Number), same_names: true, bad: [] });
    expect(r.n).toBeGreaterThan(5);
  });

  it('a sharded checkpoint saved by torch.save converts to what safetensors.torch.save_file would hold', async () => {
    const dir = await tempDir();
    await runPython(py!.exe, `
import sys, json, os, torch
d = sys.argv[1]
torch.manual_seed(0)
sd = {f"layers.{i}.weight": torch.randn(16, 8) for i in range(4)}
sd["head.bias"] = torch.arange(5, dtype=torch.int64)
names = sorted(sd)
shards = [names[:3], names[3:]]
wm = {}
for i, part in enumerate(shards):
    f = f"pytorch_model-{i+1:05d}-of-{len(shards):05d}.bin"
    torch.save({k: sd[k] for k in part}, os.path.join(d, f))
    wm.update({k: f for k in part})
json.dump({"metadata": {}, "weight_map": wm}, open(os.path.join(d, "pytorch_model.bin.index.json"), "w"))
torch.save(sd, os.path.join(d, "all.pt"))
`, { args: [dir] });
    const out = join(dir, 'out') + '/';
    const r = await tensorport('convert', dir, out, '--max-shard-size', '1000');
    expect(r.code, r.stderr).toBe(0);
    const check = await runPython(py!.exe, `
import sys, json, os, torch
from safetensors.torch import load_file
sd = torch.load(os.path.join(sys.argv[1], "all.pt"), weights_only=True)
idx = json.load(open(os.path.join(sys.argv[2], "model.safetensors.index.json")))
got = {}
for f in set(idx["weight_map"].values()):
    got.update(load_file(os.path.join(sys.argv[2], f)))
print(json.dumps({"same": sorted(got) == sorted(sd) and all(torch.equal(got[k], sd[k]) for k in sd), "shards": len(set(idx["weight_map"].values()))}))
`, { args: [dir, out] });
    const res = JSON.parse(check) as { same: boolean; shards: number };
    expect(res.same).toBe(true);
    expect(res.shards).toBeGreaterThan(1);
  });
});
