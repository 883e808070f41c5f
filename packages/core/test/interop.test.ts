/**
 * Files tensorport writes must load in the reference Python package with the same names, dtypes,
 * shapes, bytes and metadata. Python only reads and reports (names, dtypes, shapes, SHA-256 of the
 * bytes it got); every comparison happens here.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  byteLength, BytesSource, DTYPES, MemorySink, openSafetensors, openShardedCheckpoint, writeSharded,
  type Checkpoint, type DType, type TensorDescriptor,
} from '../src/index.ts';
import { writeSafetensors } from '../src/safetensors/writer.ts';
import { memTensor, patternBytes } from './helpers/mem-tensor.ts';
import { requirePython, runPython } from './helpers/python.ts';

const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

interface Seen {
  dtype: string;
  shape: number[];
  sha256: string;
}
type Pairs = Array<[string, Seen]>;
interface Report {
  metadata: Record<string, string> | null;
  keys: string[];
  deserialize: Pairs;
  safe_open_np?: Pairs;
  load_file_np?: Pairs;
  safe_open_pt?: Pairs;
  load_file_pt?: Pairs;
  values?: Array<[string, unknown]>;
}

// Reads one file every way asked for (argv: path, then "np", "pt", "values"), prints a JSON report.
// Pairs, not dicts: a tensor may be named "__proto__".
const INSPECT = String.raw`
import hashlib, json, sys
import safetensors
path, modes = sys.argv[1], sys.argv[2:]
h = lambda b: hashlib.sha256(bytes(b)).hexdigest()
raw = open(path, "rb").read()
out = {"deserialize": [[k, {"dtype": v["dtype"], "shape": list(v["shape"]), "sha256": h(v["data"])}]
                       for k, v in safetensors.deserialize(raw)]}
with safetensors.safe_open(path, framework="np") as f:
    out["metadata"] = f.metadata()
    out["keys"] = list(f.keys())
if "np" in modes:
    import numpy as np
    import safetensors.numpy as stnp
    rep = lambda a: {"dtype": a.dtype.str, "shape": list(a.shape), "sha256": h(np.ascontiguousarray(a).tobytes())}
    with safetensors.safe_open(path, framework="np") as f:
        out["safe_open_np"] = [[k, rep(f.get_tensor(k))] for k in f.keys()]
    out["load_file_np"] = [[k, rep(a)] for k, a in stnp.load_file(path).items()]
    if "values" in modes:
        out["values"] = [[k, a.astype(float).tolist() if a.dtype.kind in "fiub" else None]
                         for k, a in stnp.load_file(path).items()]
if "pt" in modes:
    import torch
    import safetensors.torch as stpt
    def tb(t):
        t = t.contiguous()
        return b"" if t.numel() == 0 else t.reshape(-1).view(torch.uint8).numpy().tobytes()
    rep = lambda t: {"dtype": str(t.dtype), "shape": list(t.shape), "sha256": h(tb(t))}
    with safetensors.safe_open(path, framework="pt") as f:
        out["safe_open_pt"] = [[k, rep(f.get_tensor(k))] for k in f.keys()]
    loaded = stpt.load_file(path)
    out["load_file_pt"] = [[k, rep(t)] for k, t in loaded.items()]
    if "values" in modes:
        out["values"] = [[k, t.float().reshape(-1).tolist() if t.dtype in (torch.bfloat16, torch.float16) or
                          "float8" in str(t.dtype) else None] for k, t in loaded.items()]
print(json.dumps(out))
`;

// Loads a sharded checkpoint the way transformers does: index → weight_map → safe_open each shard.
// argv: directory. Also reports which tensors each shard holds, to check the index against them.
const INSPECT_SHARDED = String.raw`
import hashlib, json, os, sys
import numpy as np
from safetensors import safe_open
d = sys.argv[1]
h = lambda b: hashlib.sha256(bytes(b)).hexdigest()
index = json.load(open(os.path.join(d, "model.safetensors.index.json")))
seen, shards = [], {}
for name, file in index["weight_map"].items():
    with safe_open(os.path.join(d, file), framework="np") as f:
        a = f.get_tensor(name)
        seen.append([name, {"dtype": a.dtype.str, "shape": list(a.shape), "sha256": h(np.ascontiguousarray(a).tobytes())}])
for file in sorted(set(index["weight_map"].values())):
    with safe_open(os.path.join(d, file), framework="np") as f:
        shards[file] = {"keys": sorted(f.keys()), "metadata": f.metadata()}
print(json.dumps({"index": index, "tensors": seen, "shards": sorted(shards.items())}))
`;

// safetensors.numpy's dtypes and the numpy dtype string each comes back as.
const NUMPY: Partial<Record<DType, string>> = {
  BOOL: '|b1', U8: '|u1', I8: '|i1', I16: '<i2', U16: '<u2', F16: '<f2', I32: '<i4', U32: '<u4',
  F32: '<f4', C64: '<c8', F64: '<f8', I64: '<i8', U64: '<u8',
};
// The torch attribute for each dtype (absent ones are skipped on older torch).
const TORCH: Partial<Record<DType, string>> = {
  BOOL: 'bool', U8: 'uint8', I8: 'int8', F8_E5M2: 'float8_e5m2', F8_E4M3: 'float8_e4m3fn',
  F8_E8M0: 'float8_e8m0fnu', F8_E4M3FNUZ: 'float8_e4m3fnuz', F8_E5M2FNUZ: 'float8_e5m2fnuz',
  I16: 'int16', U16: 'uint16', F16: 'float16', BF16: 'bfloat16', I32: 'int32', U32: 'uint32',
  F32: 'float32', C64: 'complex64', F64: 'float64', I64: 'int64', U64: 'uint64', F4: 'float4_e2m1fn_x2',
};

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tensorport-interop-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

let counter = 0;
async function writeOurs(tensors: TensorDescriptor[], metadata: Record<string, string> | Map<string, string> | null): Promise<{ path: string; bytes: Uint8Array }> {
  const sink = new MemorySink();
  await writeSafetensors(tensors, metadata, sink);
  const bytes = sink.bytes();
  const path = join(dir, `ours-${counter++}.safetensors`);
  await writeFile(path, bytes);
  return { path, bytes };
}

async function inspect(exe: string, path: string, modes: string[]): Promise<Report> {
  return JSON.parse(await runPython(exe, INSPECT, { args: [path, ...modes] })) as Report;
}

interface Source {
  name: string;
  dtype: DType;
  shape: number[];
  data: Uint8Array;
}
function source(name: string, dtype: DType, shape: number[], seed = name.length + shape.length): Source {
  return { name, dtype, shape, data: patternBytes(byteLength(dtype, shape), seed) };
}
const descriptors = (s: Source[]): TensorDescriptor[] => s.map((t) => memTensor(t.name, t.dtype, t.shape, t.data));

/** Every reader in the report saw exactly our tensors: same names, dtypes, shapes and bytes. */
function expectSame(report: Report, sources: Source[], readers: Array<keyof Report>): void {
  const byName = new Map(sources.map((s) => [s.name, s]));
  expect(new Set(report.keys)).toEqual(new Set(byName.keys()));
  expect(report.keys.length).toBe(sources.length);
  const expectedDeser = sources.map((s) => [s.name, { dtype: s.dtype, shape: s.shape, sha256: sha256(s.data) }]);
  expect(sortPairs(report.deserialize)).toEqual(sortPairs(expectedDeser as Pairs));
  for (const reader of readers) {
    const seen = report[reader] as Pairs | undefined;
    expect(seen, `${String(reader)} missing from the report`).toBeDefined();
    const framework = String(reader).endsWith('_np') ? 'np' : 'pt';
    const expected = sources.map((s): [string, Seen] => [s.name, expectedIn(framework, s)]);
    expect(sortPairs(seen!)).toEqual(sortPairs(expected));
  }
}

function expectedIn(framework: 'np' | 'pt', s: Source): Seen {
  if (framework === 'np') return { dtype: NUMPY[s.dtype]!, shape: s.shape, sha256: sha256(s.data) };
  // torch stores F4 in pairs: the last dimension is halved.
  const shape = s.dtype === 'F4' ? [...s.shape.slice(0, -1), s.shape[s.shape.length - 1]! / 2] : s.shape;
  return { dtype: `torch.${TORCH[s.dtype]!}`, shape, sha256: sha256(s.data) };
}

const sortPairs = (p: Pairs): Pairs => [...p].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));

const NAMES = [
  '10', '2', '01', '0', '__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', '',
  'a"quote', 'back\\slash', 'tab\tand\nnewline', 'ctl\u0001\u001f', 'del\u007f', 'line\u2028sep',
  'αβγ.weight', '模型.层', 'emoji🙂', '\uffff', '\u{10000}', 'é', 'e\u0301', 'model.layers.0.self_attn.q_proj.weight',
];

const py = await requirePython(['safetensors', 'numpy']);

describe.skipIf(!py)('files we write load in the reference package (numpy)', () => {
  const exe = (): string => py!.exe;

  it('every dtype, through safetensors.deserialize (raw bytes, dtype names)', async () => {
    const sources = DTYPES.map((d) => source(`t_${d}`, d, d === 'F4' ? [2, 6] : d.startsWith('F6') ? [3, 4] : [2, 3]));
    const { path } = await writeOurs(descriptors(sources), { format: 'pt' });
    const report = await inspect(exe(), path, []);
    expect(report.metadata).toEqual({ format: 'pt' });
    expectSame(report, sources, []);
  });

  it('every numpy dtype, through safe_open and load_file (framework numpy)', async () => {
    const dtypes = Object.keys(NUMPY) as DType[];
    const sources = dtypes.map((d, i) => source(`n.${d}`, d, [3, 2], i));
    // BOOL must hold 0/1: numpy would keep other bytes but they are not valid booleans.
    const bool = sources.find((s) => s.dtype === 'BOOL')!;
    bool.data = bool.data.map((b) => b & 1);
    const { path } = await writeOurs(descriptors(sources), null);
    const report = await inspect(exe(), path, ['np']);
    expect(report.metadata).toBeNull();
    expectSame(report, sources, ['safe_open_np', 'load_file_np']);
  });

  it('decodes values: F32/I16/U8 read back as the numbers we encoded', async () => {
    const f32 = new Float32Array([1.5, -2, 0, 3.25e10, -1e-30, 7]);
    const i16 = new Int16Array([-32768, 32767, 0, -1, 1, 256]);
    const sources: Source[] = [
      { name: 'f', dtype: 'F32', shape: [2, 3], data: new Uint8Array(f32.buffer) },
      { name: 'i', dtype: 'I16', shape: [6], data: new Uint8Array(i16.buffer) },
      { name: 'u', dtype: 'U8', shape: [1, 6], data: new Uint8Array([0, 1, 127, 128, 254, 255]) },
    ];
    const { path } = await writeOurs(descriptors(sources), null);
    const report = await inspect(exe(), path, ['np', 'values']);
    const values = new Map(report.values);
    expect(values.get('f')).toEqual([[...f32.slice(0, 3)], [...f32.slice(3)]]);
    expect(values.get('i')).toEqual([...i16]);
    expect(values.get('u')).toEqual([[0, 1, 127, 128, 254, 255]]);
  });

  it('metadata: several keys, unicode, __proto__ and integer-like keys, empty strings', async () => {
    const metadata = new Map<string, string>([
      ['format', 'pt'], ['__proto__', 'proto'], ['10', 'ten'], ['2', 'two'], ['', 'empty key'],
      ['empty value', ''], ['unicode', 'ü→🙂\u2028'], ['json', '{"nested": [1, 2]}'], ['ctl', 'a\u0000b\nc'],
    ]);
    const sources = [source('w', 'F16', [4])];
    const { path } = await writeOurs(descriptors(sources), metadata);
    const report = await inspect(exe(), path, ['np']);
    expect(new Map(Object.entries(report.metadata ?? {}))).toEqual(metadata);
    expectSame(report, sources, ['safe_open_np', 'load_file_np']);
  });

  it('metadata {} and no metadata are told apart; no tensors at all loads', async () => {
    const empty = await inspect(exe(), (await writeOurs([], {})).path, []);
    expect(empty.metadata).toEqual({});
    expect(empty.keys).toEqual([]);
    const none = await inspect(exe(), (await writeOurs([], null)).path, []);
    expect(none.metadata).toBeNull();
    const metaOnly = await inspect(exe(), (await writeOurs([], { only: 'metadata' })).path, []);
    expect(metaOnly.metadata).toEqual({ only: 'metadata' });
    expect(metaOnly.deserialize).toEqual([]);
  });

  it('scalars (shape [])', async () => {
    const sources = (['F32', 'I64', 'U8', 'BOOL', 'F64', 'C64', 'I16'] as DType[]).map((d) => source(`s_${d}`, d, []));
    sources.find((s) => s.dtype === 'BOOL')!.data = new Uint8Array([1]);
    const report = await inspect(exe(), (await writeOurs(descriptors(sources), null)).path, ['np']);
    expectSame(report, sources, ['safe_open_np', 'load_file_np']);
  });

  it('empty tensors, several sharing one offset', async () => {
    const sources = [
      source('e1', 'F32', [0]), source('e2', 'I32', [2, 0]), source('e3', 'F16', [0, 3, 4]),
      source('full', 'F32', [4]), source('e4', 'U8', [0]), source('e5', 'F64', [5, 0]),
    ];
    const report = await inspect(exe(), (await writeOurs(descriptors(sources), null)).path, ['np']);
    expectSame(report, sources, ['safe_open_np', 'load_file_np']);
  });

  it('unicode, integer-like, empty, __proto__ and constructor names', async () => {
    const sources = NAMES.map((n, i) => source(n, 'I32', [2], i));
    const report = await inspect(exe(), (await writeOurs(descriptors(sources), new Map([['__proto__', 'x']]))).path, ['np']);
    expect(Object.entries(report.metadata ?? {})).toEqual([['__proto__', 'x']]);
    expectSame(report, sources, ['safe_open_np', 'load_file_np']);
  });
});

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '../../../fixtures/safetensors');

async function writeShardedTo(target: string, tensors: readonly TensorDescriptor[], metadata: Record<string, string> | null, maxShardSize: number): Promise<string[]> {
  await mkdir(target, { recursive: true });
  const sinks = new Map<string, MemorySink>();
  const result = await writeSharded(tensors, metadata, async (name) => {
    const sink = new MemorySink(name);
    sinks.set(name, sink);
    return sink;
  }, { maxShardSize });
  for (const [name, sink] of sinks) await writeFile(join(target, name), sink.bytes());
  return result.files;
}

async function openShardedDir(d: string): Promise<Checkpoint> {
  return openShardedCheckpoint(new Uint8Array(await readFile(join(d, 'model.safetensors.index.json'))), async (name) =>
    new BytesSource(new Uint8Array(await readFile(join(d, name))), name),
  );
}

/** name → [dtype, shape, sha256 of the streamed bytes] */
async function digest(c: Checkpoint): Promise<Map<string, [string, string, string]>> {
  const out = new Map<string, [string, string, string]>();
  for (const t of c.tensors) {
    const h = createHash('sha256');
    for await (const chunk of t.chunks()) h.update(chunk);
    out.set(t.name, [t.dtype, JSON.stringify(t.shape), h.digest('hex')]);
  }
  return out;
}

interface ShardedReport {
  index: { metadata: { total_size: number }; weight_map: Record<string, string> };
  tensors: Pairs;
  shards: Array<[string, { keys: string[]; metadata: Record<string, string> | null }]>;
}

describe.skipIf(!py)('sharded checkpoints we write load in the reference package', () => {
  it('shards + index (transformers layout) load tensor by tensor with identical bytes', async () => {
    const dtypes: DType[] = ['F32', 'F16', 'I64', 'U8', 'I32', 'F64'];
    const sources = Array.from({ length: 14 }, (_, i) => source(`model.layers.${i}.w`, dtypes[i % dtypes.length]!, [8, 4 + i], i));
    const target = join(dir, 'sharded-ours');
    const files = await writeShardedTo(target, descriptors(sources), { format: 'pt' }, 700);
    expect(files.length).toBeGreaterThanOrEqual(4);
    expect(files).toContain('model.safetensors.index.json');
    const report = JSON.parse(await runPython(py!.exe, INSPECT_SHARDED, { args: [target] })) as ShardedReport;
    expect(sortPairs(report.tensors)).toEqual(sortPairs(sources.map((s): [string, Seen] => [s.name, expectedIn('np', s)])));
    expect(report.index.metadata.total_size).toBe(sources.reduce((n, s) => n + s.data.byteLength, 0));
    for (const [file, shard] of report.shards) {
      expect(shard.metadata).toEqual({ format: 'pt' });
      const listed = Object.entries(report.index.weight_map).filter(([, f]) => f === file).map(([n]) => n).sort();
      expect(shard.keys).toEqual(listed);
    }
    expect(report.shards.map(([f]) => f)).toEqual(files.filter((f) => f !== 'model.safetensors.index.json').sort());
  });

  it('Python-written shards → one file → shards again: same tensors everywhere, and Python agrees', async () => {
    const original = await openShardedDir(join(FIXTURES, 'sharded'));
    const before = await digest(original);
    expect(before.size).toBeGreaterThan(20);

    // Merge into one file.
    const merged = new MemorySink();
    await writeSafetensors(original.tensors, original.metadata, merged);
    await original.close();
    const mergedPath = join(dir, 'merged.safetensors');
    await writeFile(mergedPath, merged.bytes());
    const single = await openSafetensors(new BytesSource(merged.bytes(), 'merged'));
    expect(await digest(single)).toEqual(before);
    const pyMerged = await inspect(py!.exe, mergedPath, ['np']);
    expect(pyMerged.metadata).toEqual({ format: 'pt' });
    expect(new Map(pyMerged.load_file_np!.map(([n, t]) => [n, t.sha256]))).toEqual(new Map([...before].map(([n, v]) => [n, v[2]])));

    // Split again, smaller shards than the original.
    const target = join(dir, 'resharded');
    const files = await writeShardedTo(target, single.tensors, { format: 'pt' }, 4000);
    expect(files.length).toBeGreaterThan(2);
    const again = await openShardedDir(target);
    expect(await digest(again)).toEqual(before);
    await again.close();
    const report = JSON.parse(await runPython(py!.exe, INSPECT_SHARDED, { args: [target] })) as ShardedReport;
    expect(new Map(report.tensors.map(([n, t]) => [n, t.sha256]))).toEqual(new Map([...before].map(([n, v]) => [n, v[2]])));
    expect((await readdir(target)).sort()).toEqual([...files].sort());
  });
});

const pt = await requirePython(['safetensors', 'torch'], { optional: true });

describe.skipIf(!pt)('files we write load in the reference package (torch)', () => {
  it('every dtype this torch has (BF16, F8 variants, F4, unsigned), safe_open and load_file', async () => {
    const have = JSON.parse(
      await runPython(pt!.exe, 'import json, sys, torch; print(json.dumps([a for a in sys.argv[1:] if getattr(torch, a, None) is not None]))', {
        args: Object.values(TORCH),
      }),
    ) as string[];
    const dtypes = (Object.keys(TORCH) as DType[]).filter((d) => have.includes(TORCH[d]!));
    expect(dtypes).toContain('BF16');
    const sources = dtypes.map((d, i) => source(`p.${d}`, d, d === 'F4' ? [3, 4] : [4, 2], i));
    sources.find((s) => s.dtype === 'BOOL')!.data = new Uint8Array([1, 0, 1, 1, 0, 0, 1, 0]);
    const report = await inspect(pt!.exe, (await writeOurs(descriptors(sources), { format: 'pt' })).path, ['pt']);
    expect(report.metadata).toEqual({ format: 'pt' });
    expectSame(report, sources, ['safe_open_pt', 'load_file_pt']);
  });

  it('BF16 and F8_E4M3 bits decode to the values they encode', async () => {
    // bf16: 1.0 = 0x3F80, -2.0 = 0xC000, 0.5 = 0x3F00; e4m3fn: 1.0 = 0x38, -0.5 = 0xB0, 448 = 0x7E.
    const bf16 = new Uint8Array(new Uint16Array([0x3f80, 0xc000, 0x3f00]).buffer);
    const sources: Source[] = [{ name: 'b', dtype: 'BF16', shape: [3], data: bf16 }];
    const f8 = await runPython(pt!.exe, 'import torch; print(int(hasattr(torch, "float8_e4m3fn")))');
    if (f8.trim() === '1') sources.push({ name: 'e', dtype: 'F8_E4M3', shape: [3], data: new Uint8Array([0x38, 0xb0, 0x7e]) });
    const report = await inspect(pt!.exe, (await writeOurs(descriptors(sources), null)).path, ['pt', 'values']);
    const values = new Map(report.values);
    expect(values.get('b')).toEqual([1, -2, 0.5]);
    if (sources.length === 2) expect(values.get('e')).toEqual([1, -0.5, 448]);
  });
});
