import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BytesSource, MemorySink, openSafetensors, writeSafetensors } from '@tensorport/core';
import { nodeZlibCodec } from '@tensorport/core/node';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { formatNpyHeader, openNpy, openNpz, writeNpz } from '../src/index.ts';
import fc from 'fast-check';
import type { DType } from '@tensorport/core';
import { PatchableMemorySink, bytesOf, fixture, fixturePath } from './helpers.ts';
import { readdirSync } from 'node:fs';

const py = await requirePython(['numpy', 'safetensors']);

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tp-npz-interop-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/**
 * Checks, per key: the original npz, our safetensors (read with safetensors.deserialize) and our
 * npz (read with np.load) agree on shape and values (np.array_equal; V2 compared as uint16), and
 * the npz dtypes agree up to byte order. Prints one line per key.
 */
const CHECK = `
import sys, numpy as np
from safetensors import deserialize
orig_path, st_path, *ours = sys.argv[1:]
orig = np.load(orig_path)
st = {name: info for name, info in deserialize(open(st_path, "rb").read())}
ST = {"BOOL": "|b1", "I8": "|i1", "U8": "|u1", "I16": "<i2", "U16": "<u2", "I32": "<i4", "U32": "<u4", "I64": "<i8",
      "U64": "<u8", "F16": "<f2", "F32": "<f4", "F64": "<f8", "C64": "<c8", "BF16": "<u2"}
def norm(a):
    a = a.view("<u2") if a.dtype.kind == "V" else a
    return a.astype(a.dtype.newbyteorder("<"))
assert sorted(st) == sorted(orig.files), (sorted(st), sorted(orig.files))
for path in ours:
    back = np.load(path)
    # safetensors stores tensors in its own order, so only the key sets must agree
    assert sorted(back.files) == sorted(orig.files), (back.files, orig.files)
    for k in orig.files:
        a, b = orig[k], back[k]
        assert a.shape == b.shape, (k, a.shape, b.shape)
        assert a.dtype.kind == b.dtype.kind and a.dtype.itemsize == b.dtype.itemsize, (k, a.dtype, b.dtype)
        assert np.array_equal(norm(a), norm(b)), k
for k in orig.files:
    a, info = norm(orig[k]), st[k]
    s = np.frombuffer(bytes(info["data"]), dtype=ST[info["dtype"]]).reshape(info["shape"])
    assert list(a.shape) == list(info["shape"]), (k, a.shape, info["shape"])
    assert np.array_equal(a.view(s.dtype) if a.dtype.kind == "V" else a, s), k
    print(k, info["dtype"], list(a.shape))
`;

describe.skipIf(!py)('numpy interop', () => {
  const files = [
    'npz/savez.npz', 'npz/savez_compressed.npz', 'npz/savez_positional.npz', 'npz/savez_streamed.npz',
    'npz/savez_compressed_streamed.npz', 'npz/savez_bf16.npz', 'reference/jax_bf16.npz', 'reference/savez_keywords.npz',
  ];
  for (const f of files) {
    it(`${f}: npz → safetensors → npz (stored, compressed, data descriptors) round-trips per np.load and safetensors`, async () => {
      const ck = await openNpz(new BytesSource(await fixture(f)), { codec: nodeZlibCodec });
      const st = new MemorySink();
      await writeSafetensors(ck.tensors, null, st);
      const stPath = join(dir, `${f.replace(/\W/g, '_')}.safetensors`);
      await writeFile(stPath, st.bytes());
      const outs: string[] = [];
      // stored with patched local headers, deflated with patched headers, stored with data descriptors
      for (const [compress, patch] of [[false, true], [true, true], [false, false]] as const) {
        const back = await openSafetensors(new BytesSource(st.bytes()));
        const sink = patch ? new PatchableMemorySink() : new MemorySink();
        await writeNpz(back.tensors, sink, { compress, codec: nodeZlibCodec });
        const p = join(dir, `${f.replace(/\W/g, '_')}.${compress ? 'z' : 's'}${patch ? 'p' : 'd'}.npz`);
        await writeFile(p, sink.bytes());
        outs.push(p);
      }
      const out = await runPython(py!.exe, CHECK, { args: [fixturePath(f), stPath, ...outs] });
      // safetensors sorts nothing away: every tensor of the original is checked
      expect(out.trim().split('\n').filter(Boolean).length).toBe(ck.tensors.length);
    });
  }

  it('empty archive: npz → safetensors → npz', async () => {
    const ck = await openNpz(new BytesSource(await fixture('npz/savez_empty.npz')));
    const st = new MemorySink();
    await writeSafetensors(ck.tensors, null, st);
    const back = await openSafetensors(new BytesSource(st.bytes()));
    const sink = new MemorySink();
    await writeNpz(back.tensors, sink);
    const p = join(dir, 'empty.npz');
    await writeFile(p, sink.bytes());
    const out = await runPython(py!.exe, `import sys, numpy as np; print(len(np.load(sys.argv[1]).files))`, { args: [p] });
    expect(out.trim()).toBe('0');
  });

  it('every .npy fixture we accept reads as numpy reads it (C order, little-endian)', async () => {
    const got: Record<string, [string, number[], string]> = {};
    for (const f of readdirSync(fixturePath('npy')).filter((x) => !x.startsWith('refuse_') && x !== 'f8e4m3fn.npy')) {
      if (f === 'f8e5m2.npy') continue; // plain numpy cannot load '<f1'
      const t = (await openNpy(new BytesSource(await fixture(`npy/${f}`), f))).tensors[0]!;
      got[f] = [t.dtype, [...t.shape], Buffer.from(await bytesOf(t)).toString('hex')];
    }
    const out = await runPython(
      py!.exe,
      `
import sys, json, numpy as np
got = json.load(sys.stdin)
for f, (dtype, shape, hexdata) in got.items():
    a = np.load(sys.argv[1] + "/" + f)
    a = a.view("<u2") if a.dtype.kind == "V" else a
    want = np.ascontiguousarray(a.astype(a.dtype.newbyteorder("<"))).tobytes()
    assert list(a.shape) == shape, (f, a.shape, shape)
    assert want.hex() == hexdata, f
print(len(got))
`,
      { args: [fixturePath('npy')], input: JSON.stringify(got) },
    );
    expect(Number(out.trim())).toBe(Object.keys(got).length);
    expect(Object.keys(got).length).toBeGreaterThan(25);
  });

  it('writes the same .npy header as np.save for random shapes and dtypes', async () => {
    const DESCR: Array<[DType, string]> = [['BOOL', '?'], ['I8', 'i1'], ['U16', '<u2'], ['I32', '<i4'], ['U64', '<u8'], ['F16', '<f2'], ['F64', '<f8'], ['C64', '<c8']];
    const cases = fc.sample(
      fc.record({ d: fc.nat(DESCR.length - 1), shape: fc.array(fc.oneof(fc.nat(3), fc.nat(10 ** 12)), { maxLength: 12 }) }),
      { numRuns: 300, seed: 1 },
    );
    const ours = cases.map(({ d, shape }) => Buffer.from(formatNpyHeader(DESCR[d]![0], shape, 't', () => {})).toString('hex'));
    const out = await runPython(
      py!.exe,
      `
import sys, io, json, numpy as np
from numpy.lib import format as F
cases, ours = json.load(sys.stdin)
bad = 0
for (descr, shape), mine in zip(cases, ours):
    b = io.BytesIO()
    F.write_array_header_1_0(b, {"descr": np.dtype(descr).str, "fortran_order": False, "shape": tuple(shape)})
    if b.getvalue().hex() != mine:
        bad += 1
        print("mismatch", descr, shape, file=sys.stderr)
print(len(cases) - bad)
`,
      { input: JSON.stringify([cases.map(({ d, shape }) => [DESCR[d]![1], shape]), ours]) },
    );
    expect(Number(out.trim())).toBe(cases.length);
  });
});
