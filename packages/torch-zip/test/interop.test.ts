import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BytesSource, MemorySink, type TensorDescriptor } from '@tensorport/core';
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
const debian = await runPython('/usr/bin/python3', 'import torch; print(torch.__version__)').then((v) => (v.startsWith('1.') ? '/usr/bin/python3' : null), () => null);
if (!debian) console.log('interop: torch 1.13 checks skipped: /usr/bin/python3 has no torch 1.x');

const DESCRIBE = `import sys, json; sys.path.insert(0, ${JSON.stringify(FIXTURES)}); from generate import describe`;

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
print(json.dumps(describe(torch.load(sys.argv[1], weights_only=True))))
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

  for (const [source, v113] of [['dtypes.pt', false], ['transformers.pt', true], ['views.pt', true], ['dtypes_t113.pt', true]] as const) {
    it(`our .pt from ${source} loads with weights_only=True in torch ${py?.versions.torch}${v113 && debian ? ' and 1.13' : ''}, equal`, async () => {
      const src = await openTorchCheckpoint(new BytesSource(readBytes(`${FIXTURES}checkpoints/${source}`), source), { skipUnsupported: true });
      const sink = new MemorySink();
      const report = await writeTorchCheckpoint(src, sink);
      const out = join(dir, `ours_${source}`);
      writeFileSync(out, sink.bytes());
      const expected: Record<string, Described> = {};
      const all = await openTorchCheckpoint(sink.bytes(), { keepAliases: true });
      for (const t of all.tensors) expected[t.name] = { dtype: '', shape: [...t.shape], sha256: await digest(t) };
      for (const exe of [py!.exe, ...(v113 && debian ? [debian] : [])]) {
        const loaded = JSON.parse(await runPython(exe, LOAD, { args: [out] })) as Record<string, Described>;
        expect(Object.keys(loaded).sort(), exe).toEqual(report.tensors.slice().sort());
        for (const [name, d] of Object.entries(loaded)) expect(d.sha256, `${exe} ${name}`).toBe(expected[name]!.sha256);
        await expectEqual(all.tensors, loaded);
      }
    });
  }
});
