import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { REPO, sparseSafetensors, tempDir, tensorport } from './helpers.ts';

const IDENTIFY = join(REPO, 'fixtures/identify');

describe('tensorport identify', () => {
  it('names every fixture from its bytes, with what tensorport can do, as JSON', async () => {
    const files = (await readdir(IDENTIFY)).filter((f) => !f.endsWith('.py') && f !== 'VERSIONS.json').sort();
    const r = await tensorport('identify', '--json', ...files.map((f) => join(IDENTIFY, f)));
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as Array<{ path: string; kind: string; can: string; warnings: { code: string }[] }>;
    const kinds = Object.fromEntries(out.map((x) => [x.path.slice(IDENTIFY.length + 1), x.kind]));
    expect(kinds).toMatchObject({
      'really-safetensors.bin': 'safetensors',
      'checkpoint.pt': 'torch-zip',
      'legacy.pt': 'torch-legacy',
      'scripted.pt': 'torchscript',
      'mlx-quantized.npz': 'mlx-quantized',
      'relu.onnx': 'onnx',
      'tiny.gguf': 'gguf',
      'keras.h5': 'hdf5',
    });
    for (const x of out) expect(x.can.length, x.path).toBeGreaterThan(0);
    expect(out.find((x) => x.path.endsWith('really-safetensors.bin'))!.warnings.map((w) => w.code)).toEqual(['ExtensionMismatch']);
  });

  it('text output names the content, the abilities and the mismatch; a missing file exits 1', async () => {
    const r = await tensorport('identify', join(IDENTIFY, 'really-safetensors.bin'), join(IDENTIFY, 'nope.pt'));
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('really-safetensors.bin: safetensors');
    expect(r.stdout).toContain('can: convert, inspect, validate');
    expect(r.stdout).toMatch(/warning: ExtensionMismatch: .*'\.bin'.*bytes are safetensors/);
    expect(r.stderr).toContain('nope.pt');
  });

  it('inspect, validate and convert use the same detection: unsupported kinds are named', async () => {
    const r = await tensorport('inspect', join(IDENTIFY, 'relu.onnx'));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('ONNX model');
    const g = await tensorport('convert', join(IDENTIFY, 'keras.h5'), join(await tempDir(), 'x.safetensors'));
    expect(g.code).toBe(1);
    expect(g.stderr).toContain('HDF5');
  });
});

describe('tensorport diff', () => {
  it('a single flipped bit in 1 GiB of tensor data is found, at the right element', async () => {
    const dir = await tempDir();
    const size = 1 << 30;
    await sparseSafetensors(join(dir, 'a.safetensors'), size);
    await sparseSafetensors(join(dir, 'b.safetensors'), size, size / 2 + 1);
    const r = await tensorport('diff', join(dir, 'a.safetensors'), join(dir, 'b.safetensors'), '--json');
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout);
    expect(out.equal).toBe(false);
    expect(out.changed).toEqual([expect.objectContaining({ name: 'w', reason: 'values', mismatches: 1, firstMismatch: size / 8 })]);
  }, 180_000);

  it('names only on one side, dtype changes; --names-only; usage errors exit 2', async () => {
    const dir = await tempDir();
    const a = join(dir, 'a.safetensors');
    const b = join(dir, 'b.safetensors');
    expect((await tensorport('convert', join(IDENTIFY, 'model.safetensors'), a)).code).toBe(0);
    expect((await tensorport('convert', join(IDENTIFY, 'model.safetensors'), b, '--dtype', 'f16')).code).toBe(0);
    const r = await tensorport('diff', a, join(IDENTIFY, 'really-safetensors.bin'));
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('only in a  b');
    const d = await tensorport('diff', a, b, '--names-only', '--json');
    const changed = (JSON.parse(d.stdout).changed as { name: string }[]).sort((x, y) => x.name.localeCompare(y.name));
    expect(changed).toEqual([
      { name: 'b', reason: 'dtype', detail: 'F32 -> F16' },
      { name: 'w', reason: 'dtype', detail: 'F32 -> F16' },
    ]);
    expect((await tensorport('diff', a, b, '--rtol', 'x')).code).toBe(2);
    expect((await tensorport('diff', a)).code).toBe(2);
  });
});

const py = await requirePython(['numpy', 'torch', 'safetensors']);

describe.skipIf(!py)('tensorport diff agrees with numpy and torch', () => {
  it('mismatch counts and max errors match numpy isclose / abs on npz inputs', async () => {
    const dir = await tempDir();
    const out = await runPython(py!.exe, `
import sys, json, numpy as np
rng = np.random.default_rng(3)
a = {"x": rng.standard_normal((64, 33)).astype(np.float32), "h": rng.standard_normal(500).astype(np.float16), "i": np.arange(100, dtype=np.int64)}
b = {k: v.copy() for k, v in a.items()}
b["x"] = (b["x"] + rng.standard_normal(b["x"].shape).astype(np.float32) * 1e-3).astype(np.float32)
b["x"][3, 4] = np.nan; a["x"][3, 4] = np.nan
b["h"][::7] = (b["h"][::7] * np.float16(1.01)).astype(np.float16)
b["i"][50] = 51
np.savez(sys.argv[1], **a); np.savez(sys.argv[2], **b)
res = {}
for k in a:
    x = a[k].astype(np.float64); y = b[k].astype(np.float64)
    close = np.isclose(x, y, atol=1e-4, rtol=1e-3, equal_nan=True)
    fin = np.isfinite(x) & np.isfinite(y)
    res[k] = {"mismatches": int((~close).sum()), "maxAbs": float(np.abs(x - y)[fin].max())}
print(json.dumps(res))
`, { args: [join(dir, 'a.npz'), join(dir, 'b.npz')] });
    const want = JSON.parse(out) as Record<string, { mismatches: number; maxAbs: number }>;
    const r = await tensorport('diff', join(dir, 'a.npz'), join(dir, 'b.npz'), '--atol', '1e-4', '--rtol', '1e-3', '--json');
    expect(r.code).toBe(1);
    const changed = JSON.parse(r.stdout).changed as Array<{ name: string; mismatches: number; maxAbs: number }>;
    for (const [name, w] of Object.entries(want)) {
      const c = changed.find((x) => x.name === name);
      expect(c?.mismatches ?? 0, name).toBe(w.mismatches);
      if (c) expect(c.maxAbs, name).toBeCloseTo(w.maxAbs, 6);
    }
  });

  it('torch.save with tied weights -> safetensors: equal, the alias counted as present; torch.equal agrees', async () => {
    const dir = await tempDir();
    const pt = join(dir, 'tied.pt');
    await runPython(py!.exe, `
import sys, torch
torch.manual_seed(0)
e = torch.randn(16, 8)
torch.save({"embed.weight": e, "lm_head.weight": e, "norm": torch.ones(8, dtype=torch.bfloat16)}, sys.argv[1])
`, { args: [pt] });
    const st = join(dir, 'tied.safetensors');
    expect((await tensorport('convert', pt, st)).code).toBe(0);
    const r = await tensorport('diff', pt, st, '--json');
    const out = JSON.parse(r.stdout);
    expect(r.code).toBe(0);
    expect(out.equal).toBe(true);
    // torch.equal on the round trip says the same.
    const same = await runPython(py!.exe, `
import sys, torch
from safetensors.torch import load_file
a = torch.load(sys.argv[1]); b = load_file(sys.argv[2])
print(all(torch.equal(a[k], b.get(k, b.get("embed.weight"))) for k in a))
`, { args: [pt, st] });
    expect(same.trim()).toBe('True');
  });
});

describe('convert --verify', () => {
  it('reports verified when the output diffs equal to the input', async () => {
    const dir = await tempDir();
    const r = await tensorport('convert', join(IDENTIFY, 'checkpoint.pt'), join(dir, 'o.safetensors'), '--verify', '--json');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).verified).toBe(true);
    const plain = await tensorport('convert', join(IDENTIFY, 'checkpoint.pt'), join(dir, 'p.safetensors'), '--json');
    expect(JSON.parse(plain.stdout).verified).toBe(false);
  });

  it('verifies outputs that need read-back options: a named .npy, a float8 npz (<V1)', async () => {
    const dir = await tempDir();
    const npy = await tensorport('convert', join(REPO, 'fixtures/safetensors/dtype_F32.safetensors'), join(dir, 'one.npy'), '--verify', '--json');
    expect(npy.code, npy.stderr).toBe(0);
    expect(JSON.parse(npy.stdout).verified).toBe(true);
    const f8 = await tensorport('convert', join(REPO, 'fixtures/safetensors/dtype_F8_E4M3.safetensors'), join(dir, 'f8.npz'), '--verify', '--json');
    expect(f8.code, f8.stderr).toBe(0);
    expect(JSON.parse(f8.stdout).verified).toBe(true);
  });

  it('an output that reads back with other values is a VerifyMismatch naming the tensor', async () => {
    const { verifyContent } = await import('@tensorport/lib');
    const { BytesSource } = await import('@tensorport/core');
    const tensor = (bytes: number[]) => {
      const data = new Uint8Array(bytes);
      return { name: 'w', dtype: 'U8' as const, shape: [data.length], byteLength: data.length, range: { source: new BytesSource(data), offset: 0 }, async *chunks() { yield data; } };
    };
    const back = { format: 'fake', metadata: null, tensors: [tensor([1, 2, 4])], close: async () => undefined };
    await expect(verifyContent(back, 'out', [tensor([1, 2, 3])])).rejects.toMatchObject({ code: 'VerifyMismatch', tensor: 'w' });
    await expect(verifyContent(back, 'out', [tensor([1, 2, 4])])).resolves.toBeUndefined();
  });
});

describe('one detection for every command', () => {
  it('MLX quantized weights in an .npz are read by the npz handler, in safetensors by the safetensors one', async () => {
    const npz = await tensorport('inspect', join(IDENTIFY, 'mlx-quantized.npz'), '--json');
    expect(npz.code, npz.stderr).toBe(0);
    expect(JSON.parse(npz.stdout).format).toBe('npz');
    const st = await tensorport('inspect', join(IDENTIFY, 'mlx-quantized.safetensors'), '--json');
    expect(st.code, st.stderr).toBe(0);
    expect(JSON.parse(st.stdout).format).toBe('safetensors');
  });
});

describe('identify directories and diff across formats', () => {
  it('a sharded checkpoint directory is named by its layout; one without a checkpoint says so', async () => {
    const r = await tensorport('identify', '--json', join(REPO, 'fixtures/safetensors/sharded'), join(REPO, 'fixtures/torch'));
    expect(r.code).toBe(0);
    const [sharded, other] = JSON.parse(r.stdout);
    expect(sharded).toMatchObject({ kind: 'directory', what: 'a safetensors checkpoint directory' });
    expect(other.can).toBe('not supported');
  });

  it('an npz and the safetensors converted from it diff equal', async () => {
    const dir = await tempDir();
    const st = join(dir, 'arrays.safetensors');
    expect((await tensorport('convert', join(IDENTIFY, 'arrays.npz'), st)).code).toBe(0);
    const r = await tensorport('diff', join(IDENTIFY, 'arrays.npz'), st, '--json');
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ equal: true, compared: 2, formats: ['npz', 'safetensors'] });
  });
});
