import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { tempDir, tensorport } from './helpers.ts';

const py = await requirePython(['safetensors', 'numpy']);

describe.skipIf(!py)('interop with the Python safetensors package', () => {
  it('a file written by safetensors.numpy, cast to f16 and sharded by the CLI, loads back as numpy astype(float16)', async () => {
    const dir = await tempDir();
    const input = join(dir, 'in.safetensors');
    const shards = join(dir, 'shards') + '/';
    // Random F32 weights plus the values casts get wrong: ±0, ±inf, NaN, subnormals, overflow, ties.
    await runPython(py!.exe, `
import sys, numpy as np
from safetensors.numpy import save_file
rng = np.random.default_rng(7)
special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-8, -6e-5, 70000.0, 65520.0, 1 + 2**-11, 1 + 3 * 2**-11], dtype=np.float32)
t = {f"layers.{i}.weight": rng.standard_normal((64, 48)).astype(np.float32) for i in range(6)}
t["special"] = special
t["steps"] = np.arange(12, dtype=np.int64)
save_file(t, sys.argv[1], metadata={"format": "np"})
`, { args: [input] });
    const r = await tensorport('convert', input, shards, '--dtype', 'f16', '--max-shard-size', '20KB');
    expect(r.code).toBe(0);
    const report = await runPython(py!.exe, `
import sys, json, os, numpy as np
from safetensors.numpy import load_file
src = load_file(sys.argv[1])
index = json.load(open(os.path.join(sys.argv[2], "model.safetensors.index.json")))
out = {}
for shard in sorted(set(index["weight_map"].values())):
    out.update(load_file(os.path.join(sys.argv[2], shard)))
bad = []
for name, x in src.items():
    y = out[name]
    want = x.astype(np.float16) if x.dtype == np.float32 else x
    if y.dtype != want.dtype or y.shape != want.shape or y.tobytes() != want.tobytes():
        bad.append(name)
print(json.dumps({"tensors": len(out), "shards": len(set(index["weight_map"].values())), "bad": bad, "names": sorted(out) == sorted(src)}))
`, { args: [input, shards] });
    const result = JSON.parse(report);
    expect(result).toEqual({ tensors: 8, shards: expect.any(Number), bad: [], names: true });
    expect(result.shards).toBeGreaterThan(1);
  });
});
