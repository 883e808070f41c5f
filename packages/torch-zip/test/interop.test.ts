import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BytesSource, MemorySink, openSafetensors, type TensorDescriptor } from '@tensorport/core';
import { describe, expect, it } from 'vitest';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { openTorchCheckpoint, TORCH_DTYPES, writeTorchCheckpoint, type TorchDtype } from '../src/index.ts';
import { digest } from './helpers/digest.ts';
import { FIXTURES, readBytes } from './helpers/paths.ts';

/**
 * Live interop with real torch: checkpoints torch writes now (not only the committed fixtures) read
 * equal to torch.load, and the .pt files we write load with `weights_only=True` and are equal.
 * Runs against the first Python with torch (pip's 2.x), and against Debian's torch 1.13 when present.
 */
const py = await requirePython(['torch']);
/** Every interpreter with torch we can find, by major version: pip's 2.x and Debian's 1.13 may both be here. */
const candidates = [...new Set([py?.exe, 'python3', '/usr/bin/python3'].filter((x): x is string => !!x))];
const torches = new Map<string, string>();
for (const exe of candidates) {
  const v = await runPython(exe, 'import torch; print(torch.__version__)').then((x) => x.trim(), () => null);
  if (v) torches.set(exe, v);
}
const torch2 = [...torches].find(([, v]) => !v.startsWith('1.'))?.[0] ?? null;
const torch1 = [...torches].find(([, v]) => v.startsWith('1.'))?.[0] ?? null;
if (py && !torch2) console.log('interop: torch >= 2.1 checks (float8, uint16/32/64 via _rebuild_tensor_v3) skipped: no python with torch 2.x');
if (py && !torch1) console.log('interop: torch 1.13 checks skipped: no python with torch 1.x');

const DESCRIBE = `import sys, json; sys.dont_write_bytecode = True; sys.path.insert(0, ${JSON.stringify(FIXTURES)}); from generate import describe`;

interface Described { dtype: string; shape: number[]; sha256: string }

async function expectEqual(tensors: readonly TensorDescriptor[], want: Record<string, Described>): Promise<void> {
  expect(tensors.map((t) => t.name).sort()).toEqual(Object.keys(want).sort());
  for (const t of tensors) {
    const w = want[t.name]!;
    expect(t.dtype, t.name).toBe(TORCH_DTYPES[w.dtype as TorchDtype].safetensors);
    expect(await digest(t), t.name).toBe(w.sha256);
  }
}

const MAKE = `
${DESCRIBE}
import torch, os
torch.manual_seed(int(sys.argv[2]))
base = torch.randn(6, 5)
emb = torch.randn(9, 4, dtype=torch.bfloat16)
sd = {"fp32": base, "t": base.t(), "col": base[:, 2], "rows": base[1:4], "half": torch.randn(3, 3).half(),
      "i64": torch.randint(-2**40, 2**40, (7,)), "mask": torch.rand(4) > 0.5, "emb": emb, "head": emb,
      "nested": {"deep": [torch.arange(5, dtype=torch.int16)]}, "scalar": torch.tensor(2.5, dtype=torch.float64)}
out = {}
for name, kw in [("zip.pt", {}), ("legacy.pt", {"_use_new_zipfile_serialization": False}), ("p4.pt", {"pickle_protocol": 4})]:
    path = os.path.join(sys.argv[1], name)
    torch.save(sd, path, **kw)
    out[name] = describe(torch.load(path, weights_only=False))
print(json.dumps(out))
`;

const LOAD = `
${DESCRIBE}
import torch
# mmap=True (torch >= 2.1) maps storages straight from the file: it needs stored, aligned records
kw = {"mmap": True} if int(torch.__version__.split(".")[0]) >= 2 else {}
print(json.dumps(describe(torch.load(sys.argv[1], weights_only=True, **kw))))
`;

describe.skipIf(!py)('interop with torch', () => {
  const dir = mkdtempSync(join(tmpdir(), 'torch-zip-interop-'));
  it('reads checkpoints torch writes now (ZIP, legacy, protocol 4) exactly as torch.load returns them', async () => {
    const made = JSON.parse(await runPython(py!.exe, MAKE, { args: [dir, '7'] })) as Record<string, Record<string, Described>>;
    for (const [file, want] of Object.entries(made)) {
      const c = await openTorchCheckpoint(new BytesSource(readFileSync(join(dir, file)), file), { keepAliases: true });
      await expectEqual(c.tensors, want);
      const deduped = await openTorchCheckpoint(new BytesSource(readFileSync(join(dir, file)), file));
      expect(deduped.aliases).toEqual({ head: 'emb' });
    }
  });

  // needs2: the output uses _rebuild_tensor_v3 (float8, uint16/32/64), which only torch >= 2.1 reads
  for (const [source, needs2] of [['dtypes.pt', true], ['transformers.pt', false], ['views.pt', false], ['dtypes_t113.pt', false]] as const) {
    const exes = [torch2, needs2 ? null : torch1].filter((x): x is string => x !== null);
    it.skipIf(exes.length === 0)(`our .pt from ${source} loads with weights_only=True (mmap on 2.x) in torch ${exes.map((e) => torches.get(e)).join(' and ')}, equal`, async () => {
      const src = await openTorchCheckpoint(new BytesSource(readBytes(`${FIXTURES}checkpoints/${source}`), source), { skipUnsupported: true });
      const sink = new MemorySink();
      const report = await writeTorchCheckpoint(src, sink);
      const out = join(dir, `ours_${source}`);
      writeFileSync(out, sink.bytes());
      const all = await openTorchCheckpoint(sink.bytes(), { keepAliases: true });
      for (const exe of exes) {
        const loaded = JSON.parse(await runPython(exe, LOAD, { args: [out] })) as Record<string, Described>;
        expect(Object.keys(loaded).sort(), exe).toEqual(report.tensors.slice().sort());
        await expectEqual(all.tensors, loaded);
      }
    });
  }
});

/** safetensors → .pt end to end, against the real `safetensors.torch.load_file` of the same file. */
const stTorch = await requirePython(['torch', 'safetensors'], { optional: true });
describe.skipIf(!stTorch || stTorch.versions.torch!.startsWith('1.'))('safetensors → .pt with real torch', () => {
  it('every dtype of all_dtypes.safetensors loads with weights_only=True equal to safetensors.torch.load_file', async () => {
    const stPath = fileURLToPath(new URL('../../../fixtures/safetensors/all_dtypes.safetensors', import.meta.url));
    const st = await openSafetensors(new BytesSource(readFileSync(stPath), stPath));
    const dir = mkdtempSync(join(tmpdir(), 'torch-zip-st-'));
    const out = join(dir, 'all_dtypes.pt');
    const sink = new MemorySink();
    const report = await writeTorchCheckpoint(st, sink);
    writeFileSync(out, sink.bytes());
    const compare = `
import sys, json, torch
from safetensors.torch import load_file
a = load_file(sys.argv[1]); b = torch.load(sys.argv[2], weights_only=True, mmap=True)
raw = lambda t: t.contiguous().reshape(-1).view(torch.uint8).tolist() if t.dtype != torch.bool else t.reshape(-1).tolist()
print(json.dumps({k: [str(b[k].dtype), a[k].dtype == b[k].dtype and list(a[k].shape) == list(b[k].shape) and raw(a[k]) == raw(b[k])] for k in a} | {"__extra__": sorted(set(b) - set(a))}))
`;
    const result = JSON.parse(await runPython(stTorch!.exe, compare, { args: [stPath, out] })) as Record<string, [string, boolean]> & { __extra__: string[] };
    expect(result.__extra__).toEqual([]);
    const names = st.tensors.map((t) => t.name);
    expect(report.tensors).toEqual(names);
    for (const n of names) expect(result[n], n).toEqual([expect.stringMatching(/^torch\./), true]);
    expect(names.length).toBe(20);
  });
});
