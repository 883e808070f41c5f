import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { diffCheckpoints } from '../src/diff/index.ts';
import { openCheckpointPath } from '../src/node/index.ts';
import { requirePython, runPython } from './helpers/python.ts';

/**
 * Issue 11 item 6: `diff --atol/--rtol` compared no values when the dtypes differed (so an F32
 * model against its BF16 copy could not be checked), said nothing about -0.0/0.0 or NaN payloads,
 * and gave no per-tensor error figures. Both files are written by torch/safetensors; what numpy's
 * isclose (in F64, as we compare) and Python's exact integers say is the expectation.
 */
const py = await requirePython(['numpy', 'torch', 'safetensors']);

const GEN = `
import json, struct, sys
import numpy as np, torch
from safetensors.torch import save_file
torch.manual_seed(0)
x = torch.randn(64, 33)
h = torch.randn(500).to(torch.float16)
i = torch.arange(100, dtype=torch.int32)
i64 = i.to(torch.int64).clone(); i64[50] = 51
big = torch.tensor([2**60, 2**60 + 1, -5, 7], dtype=torch.int64)
bigb = big.clone(); bigb[1] = 2**60 + 2
m = torch.tensor([1, 2, 3, 4], dtype=torch.int32)
z = torch.tensor([0.0, 1.0, float("nan"), 2.0])
nan2 = struct.unpack("<f", struct.pack("<I", 0x7FC00001))[0]
zb = torch.tensor([-0.0, 1.0, 0.0, 2.0]); zb[2] = nan2
a = {"x": x, "h": h, "i": i, "big": big, "m": m, "z": z}
b = {"x": x.to(torch.bfloat16), "h": h.to(torch.float32), "i": i64, "big": bigb, "m": torch.tensor([1.0, 2.0, 3.5, 4.0]), "z": zb}
save_file(a, sys.argv[1]); save_file(b, sys.argv[2])
atol, rtol = 1e-2, 1e-2
res = {}
for k in a:
    if k == "big":
        xs, ys = [int(v) for v in a[k]], [int(v) for v in b[k]]
        # exact integers (Python compares int and float exactly); numpy's isclose would round to F64
        res[k] = {"over": sum(abs(p - q) > atol + rtol * abs(q) for p, q in zip(xs, ys)), "valueDiff": sum(p != q for p, q in zip(xs, ys)), "maxAbs": float(max(abs(p - q) for p, q in zip(xs, ys)))}
        continue
    xa = a[k].to(torch.float64).numpy(); yb = b[k].to(torch.float64).numpy()
    close = np.isclose(xa, yb, atol=atol, rtol=rtol, equal_nan=True)
    exact = np.isclose(xa, yb, atol=0, rtol=0, equal_nan=True)
    fin = np.isfinite(xa) & np.isfinite(yb)
    d = np.abs(xa - yb)[fin]
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = (d / np.abs(yb[fin]))
    rel = rel[~np.isnan(rel)]
    res[k] = {"over": int((~close).sum()), "valueDiff": int((~exact).sum()), "maxAbs": float(d.max()) if d.size else 0.0, "maxRel": float(rel.max()) if rel.size else 0.0}
print(json.dumps(res))
`;

interface Want { over: number; valueDiff?: number; maxAbs: number; maxRel?: number }

describe.skipIf(!py)('diff across dtypes agrees with numpy isclose in F64', () => {
  it('F32 vs BF16, F16 vs F32, I32 vs I64, int vs float, exact 64-bit ints; -0.0/NaN payloads are "bitwise"', { timeout: 180_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tp-diff-dtypes-'));
    const [pa, pb] = [join(dir, 'a.safetensors'), join(dir, 'b.safetensors')];
    const want = JSON.parse((await runPython(py!.exe, GEN, { args: [pa, pb] })).trim().split('\n').pop()!) as Record<string, Want>;
    const a = await openCheckpointPath(pa);
    const b = await openCheckpointPath(pb);
    try {
      const tolerant = await diffCheckpoints(a, b, { atol: 1e-2, rtol: 1e-2, chunkSize: 100 });
      const byName = new Map(tolerant.errors.map((e) => [e.name, e]));
      for (const [name, w] of Object.entries(want)) {
        const e = byName.get(name)!;
        expect(e, name).toBeDefined();
        expect(e.overTolerance, name).toBe(w.over);
        expect(e.maxAbs, name).toBeCloseTo(w.maxAbs, 9);
        if (w.maxRel !== undefined && name !== 'big') expect(e.maxRel, name).toBeCloseTo(w.maxRel, 9);
        const c = tolerant.changed.find((x) => x.name === name);
        expect(c?.mismatches ?? 0, name).toBe(w.over);
      }
      expect(byName.get('x')!.dtype).toBe('F32 -> BF16');
      expect(tolerant.changed.find((c) => c.name === 'x')).toBeUndefined();
      expect(want.x!.maxAbs).toBeGreaterThan(0);

      const exact = await diffCheckpoints(a, b);
      const ch = new Map(exact.changed.map((c) => [c.name, c]));
      // the exact F16 -> F32 widening: a dtype change, every value equal
      expect(ch.get('h')).toEqual({ name: 'h', reason: 'dtype', detail: 'F16 -> F32' });
      expect(ch.get('x')).toMatchObject({ reason: 'dtype', mismatches: want.x!.valueDiff });
      expect(ch.get('z')).toMatchObject({ reason: 'values', mismatches: 2, bitwise: true, firstMismatch: 0 });
      expect(ch.get('m')).toMatchObject({ reason: 'dtype', mismatches: 1, firstMismatch: 2 });
      expect(ch.get('big')).toMatchObject({ reason: 'values', mismatches: want.big!.valueDiff, firstMismatch: 1, maxAbs: 1 });
      expect(want.big!.valueDiff).toBe(1);
      expect(exact.errors.find((e) => e.name === 'z')).toMatchObject({ overTolerance: 2, maxAbs: 0 });
    } finally {
      await a.close();
      await b.close();
    }
  });
});
