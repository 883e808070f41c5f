import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BytesSource, MemorySink, type TensorDescriptor } from '@tensorport/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { gguf, openGguf, quantizeDescriptor, writeGguf, type GgufValue } from '../src/index.ts';
import { asManifestValue, bytesOf, sha256, type Manifest } from './helpers.ts';

const py = await requirePython(['gguf', 'numpy']);

// What GGUFReader sees in a file: every field with its types and contents, every tensor's type,
// dims, offset and the sha256 of its data.
const DUMP = `
import sys, json, hashlib, math, numpy as np
from gguf import GGUFReader, GGUFValueType as V
r = GGUFReader(sys.argv[1])
def js(v):
    if isinstance(v, float) and not math.isfinite(v): return repr(v)
    if isinstance(v, list): return [js(x) for x in v]
    return v
kv = []
for f in r.fields.values():
    if f.name.startswith('GGUF.'): continue
    v = f.contents()
    v = v.item() if isinstance(v, np.generic) else v
    if f.types[-1] in (V.UINT64, V.INT64): v = [str(x) for x in v] if isinstance(v, list) else str(v)
    kv.append({'key': f.name, 'type': f.types[0].name, 'elementType': f.types[1].name if len(f.types) > 1 else None, 'value': js(v)})
ts = [{'name': t.name, 'type': t.tensor_type.name, 'dims': [int(x) for x in t.shape], 'dataOffset': int(t.data_offset),
       'nBytes': int(t.n_bytes), 'sha256': hashlib.sha256(np.asarray(t.data).tobytes()).hexdigest()} for t in r.tensors]
print(json.dumps({'kv': kv, 'tensors': ts, 'alignment': int(r.alignment), 'sha256': ''}))
`;

function mem(name: string, dtype: TensorDescriptor['dtype'], shape: number[], bytes: Uint8Array): TensorDescriptor {
  return { name, dtype, shape, byteLength: bytes.byteLength, chunks: async function* () { yield bytes; } };
}

function random(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) b[i] = (s = (s * 1103515245 + 12345) >>> 0) >>> 24;
  return b;
}

describe.skipIf(!py)('files we write, as GGUFReader reads them', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gguf-w-'));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('have the same metadata and tensors', async () => {
    const kv: Array<[string, GgufValue]> = [
      ['general.architecture', gguf.str('llama')],
      ['a.u8', gguf.u8(200)], ['a.i8', gguf.i8(-5)], ['a.u16', gguf.u16(65535)], ['a.i16', gguf.i16(-300)],
      ['a.u32', gguf.u32(4294967295)], ['a.i32', gguf.i32(-7)], ['a.f32', gguf.f32(0.1)], ['a.f64', gguf.f64(Math.PI)],
      ['a.u64', gguf.u64(2n ** 64n - 1n)], ['a.i64', gguf.i64(-(2n ** 63n))], ['a.bool', gguf.bool(false)], ['a.str', gguf.str('tête ✓ 😀')],
      ['a.tokens', gguf.strings(['<s>', '</s>', '▁hello', ''])],
      ['a.vocab', gguf.strings(Array.from({ length: 3000 }, (_, i) => `tok${i}`))],
      ['a.scores', gguf.array('FLOAT32', new Float32Array([0, -1.5, Infinity, 3]))],
      ['a.types', gguf.array('INT32', new Int32Array([1, 3, 3, 6]))],
      ['a.bools', gguf.array('BOOL', [true, false])],
      ['a.u64s', gguf.array('UINT64', new BigUint64Array([1n, 2n ** 63n]))],
    ];
    const x = new Float32Array(3 * 64).map((_, i) => Math.cos(i) * 2);
    const tensors = [
      mem('f32', 'F32', [3, 64], new Uint8Array(x.buffer)),
      mem('f16', 'F16', [7], random(14, 1)),
      mem('bf16', 'BF16', [2, 3], random(12, 2)),
      mem('i8', 'I8', [5], random(5, 3)),
      mem('i64', 'I64', [1, 2], random(16, 4)),
      mem('f64', 'F64', [3], new Uint8Array(new Float64Array([1, 2, 3]).buffer)),
      quantizeDescriptor(mem('q4_0', 'F32', [3, 64], new Uint8Array(x.buffer)), 'Q4_0'),
      { ...mem('q6_k', 'U8', [2, 210], random(420, 5)), ggmlType: 'Q6_K', logicalShape: [2, 256] },
    ];
    const sink = new MemorySink();
    await writeGguf(tensors, kv, sink, { alignment: 64 });
    const bytes = sink.bytes();
    const path = join(dir, 'ours.gguf');
    await writeFile(path, bytes);
    const got = JSON.parse(await runPython(py!.exe, DUMP, { args: [path] })) as Manifest & { alignment: number };
    expect(got.alignment).toBe(64);
    expect(got.kv.map((k) => k.key)).toEqual([...kv.map(([k]) => k), 'general.alignment']);
    const ours = await openGguf(new BytesSource(bytes));
    for (const want of got.kv) {
      const v = ours.kv.get(want.key)!;
      expect(v.type, want.key).toBe(want.type);
      if (v.type === 'ARRAY') expect(v.value.elementType, want.key).toBe(want.elementType);
      expect(asManifestValue(v), want.key).toEqual(want.value);
    }
    expect(got.tensors.map((t) => t.name)).toEqual(tensors.map((t) => t.name));
    for (const [i, t] of ours.tensors.entries()) {
      const want = got.tensors[i]!;
      expect(t.ggmlType.name).toBe(want.type);
      expect(t.dims).toEqual(want.dims);
      expect(t.fileOffset).toBe(want.dataOffset);
      expect(sha256(await bytesOf(t))).toBe(want.sha256);
      expect(sha256(await bytesOf(tensors[i]!))).toBe(want.sha256);
    }
    const text = (await readFile(path)).byteLength;
    expect(text).toBe(bytes.byteLength);
  });
});
