import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BytesSource,
  MemorySink,
  TensorportError,
  type ByteSink,
  type ByteSource,
  type DType,
  type TensorDescriptor,
} from '../src/index.ts';
import { formatShardIndex, isSafeShardName, parseShardIndex, shardFileName } from '../src/safetensors/index-file.ts';
import { openShardedCheckpoint, planShards, writeSharded } from '../src/safetensors/sharded.ts';
import { collect, memTensor } from './helpers/mem-tensor.ts';
import { requirePython, runPython } from './helpers/python.ts';
import { codeOf } from './helpers/error-code.ts';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

/** Writes through MemorySinks and keeps every file, committed or not. */
class MemoryDir {
  readonly sinks = new Map<string, MemorySink & { state?: string }>();
  open = async (name: string): Promise<ByteSink> => {
    const sink = new MemorySink(name) as MemorySink & { state?: string };
    const commit = sink.commit.bind(sink);
    const abort = sink.abort.bind(sink);
    sink.commit = async () => {
      await commit();
      sink.state = 'committed';
    };
    sink.abort = async () => {
      await abort();
      sink.state = 'aborted';
    };
    this.sinks.set(name, sink);
    return sink;
  };
  file(name: string): Uint8Array {
    return this.sinks.get(name)!.bytes();
  }
  closed = new Set<string>();
  source = async (name: string): Promise<ByteSource> => {
    const sink = this.sinks.get(name);
    if (!sink) throw Object.assign(new Error(`ENOENT: ${name}`), { code: 'ENOENT' });
    const src = new BytesSource(sink.bytes(), name);
    src.close = async () => {
      this.closed.add(name);
    };
    return src;
  };
}

const t = (name: string, dtype: DType, n: number) => memTensor(name, dtype, [n]);

describe('planShards', () => {
  it('fills greedily in writer order; a tensor above the maximum gets its own shard', () => {
    const tensors = [t('c', 'U8', 40), t('a', 'U8', 30), t('big', 'F32', 50), t('b', 'U8', 30), t('d', 'I16', 10)];
    const plans = planShards(tensors, 60);
    expect(plans.map((p) => p.indices.map((i) => tensors[i]!.name))).toEqual([['big'], ['d', 'a'], ['b'], ['c']]);
    expect(plans.map((p) => p.dataLength)).toEqual([200, 50, 30, 40]);
    expect(plans.map((p) => p.fileName)).toEqual([1, 2, 3, 4].map((k) => `model-0000${k}-of-00004.safetensors`));
  });
  it('one shard is model.safetensors, also with no tensors; default is 5·10^9 bytes', () => {
    expect(planShards([t('a', 'U8', 10)]).map((p) => p.fileName)).toEqual(['model.safetensors']);
    expect(planShards([])).toEqual([{ fileName: 'model.safetensors', indices: [], dataLength: 0 }]);
    const huge = [{ name: 'x', dtype: 'U8' as DType, shape: [5e9], byteLength: 5e9 }, { name: 'y', dtype: 'U8' as DType, shape: [1], byteLength: 1 }];
    expect(planShards(huge).length).toBe(2);
    expect(planShards(huge.slice(0, 1)).length).toBe(1);
    expect(shardFileName(0, 123456)).toBe('model-00001-of-123456.safetensors');
    expect(() => planShards([], 0)).toThrow(RangeError);
  });
});

describe('writeSharded', () => {
  const tensors = [t('layer.0.w', 'F32', 8), t('layer.1.w', 'F32', 8), t('embed', 'F16', 20), t('mask', 'BOOL', 3)];
  it('writes shards with the metadata in each, and an index like transformers', async () => {
    const dir = new MemoryDir();
    const progress: Array<[number, number]> = [];
    const r = await writeSharded(tensors, { format: 'pt' }, dir.open, { maxShardSize: 40, onProgress: (d, n) => progress.push([d, n]) });
    const f = (k: number) => `model-0000${k}-of-00004.safetensors`;
    expect(r.files).toEqual([f(1), f(2), f(3), f(4), 'model.safetensors.index.json']);
    expect(r.index).toEqual({
      // total_parameters as transformers' save_pretrained writes it: 8 + 8 + 20 + 3 elements
      metadata: { total_parameters: 39, total_size: 107 },
      weight_map: { 'layer.0.w': f(1), 'layer.1.w': f(2), embed: f(3), mask: f(4) },
    });
    expect([...dir.sinks.values()].every((s) => s.state === 'committed')).toBe(true);
    const text = new TextDecoder().decode(dir.file('model.safetensors.index.json'));
    expect(text).toBe(
      '{\n  "metadata": {\n    "total_parameters": 39,\n    "total_size": 107\n  },\n  "weight_map": {\n' +
        `    "embed": "${f(3)}",\n    "layer.0.w": "${f(1)}",\n` +
        `    "layer.1.w": "${f(2)}",\n    "mask": "${f(4)}"\n  }\n}\n`,
    );
    expect(r.bytes).toBe([...dir.sinks.values()].reduce((n, s) => n + s.bytesWritten, 0));
    expect(progress.at(-1)).toEqual([r.bytes, r.bytes]);
    // Read back as one checkpoint.
    const ckpt = await openShardedCheckpoint(dir.file('model.safetensors.index.json'), dir.source);
    expect(ckpt.warnings).toEqual([]);
    expect(ckpt.metadata).toEqual(new Map([['format', 'pt']]));
    for (const s of ckpt.shards) expect(s.checkpoint.metadata).toEqual(new Map([['format', 'pt']]));
    expect(ckpt.tensors.map((x) => x.name)).toEqual(['layer.0.w', 'layer.1.w', 'embed', 'mask']);
    for (const x of tensors) {
      const got = ckpt.tensors.find((y) => y.name === x.name)!;
      expect(Buffer.from(await collect(got)).equals(Buffer.from(await collect(x)))).toBe(true);
    }
    await ckpt.close();
    expect(dir.closed.size).toBe(4);
  });
  it('one shard: model.safetensors and no index', async () => {
    const dir = new MemoryDir();
    const r = await writeSharded(tensors, null, dir.open);
    expect(r).toMatchObject({ files: ['model.safetensors'], index: null });
    expect([...dir.sinks.keys()]).toEqual(['model.safetensors']);
  });
  it('commits nothing when any shard fails; aborts every sink', async () => {
    const failing: TensorDescriptor = {
      ...t('layer.1.w', 'F32', 8),
      async *chunks() {
        yield new Uint8Array(4);
        throw new Error('read error');
      },
    };
    const dir = new MemoryDir();
    await expect(writeSharded([tensors[0]!, failing, tensors[2]!], null, dir.open, { maxShardSize: 40 })).rejects.toThrow('read error');
    expect([...dir.sinks.values()].map((s) => s.state)).toEqual(['aborted', 'aborted']);
  });
  it('refuses duplicate names across shards and a too-large header before opening any sink', async () => {
    const dir = new MemoryDir();
    expect(await codeOf(writeSharded([t('a', 'U8', 50), t('a', 'F32', 50)], null, dir.open, { maxShardSize: 60 }))).toBe('DuplicateTensorName');
    expect(await codeOf(writeSharded([t('a', 'U8', 1)], { k: 'x'.repeat(100_000_001) }, dir.open))).toBe('HeaderTooLarge');
    expect(dir.sinks.size).toBe(0);
  });
});

describe('index file', () => {
  const wm = (entries: Record<string, unknown>, meta: unknown = { total_size: 0 }) => enc(JSON.stringify({ metadata: meta, weight_map: entries }));
  it('parses weight_map, total_size, metadata (with __proto__ as a plain key)', () => {
    const idx = parseShardIndex(enc('{"metadata":{"total_size":12,"__proto__":{"x":1},"big":18446744073709551615},"weight_map":{"__proto__":"b.safetensors","a":"a.safetensors","c":"b.safetensors"},"other":[1]}'));
    expect([...idx.weightMap]).toEqual([['__proto__', 'b.safetensors'], ['a', 'a.safetensors'], ['c', 'b.safetensors']]);
    expect(idx.shardFiles).toEqual(['a.safetensors', 'b.safetensors']);
    expect(idx.totalSize).toBe(12);
    expect(Object.keys(idx.metadata!)).toEqual(['total_size', '__proto__', 'big']);
    expect(idx.metadata!.big).toBe('18446744073709551615');
    expect(Object.getPrototypeOf({})).toBe(Object.prototype);
  });
  it.each([
    ['not JSON', enc('{"weight_map":')],
    ['not an object', enc('[]')],
    ['no weight_map', enc('{"metadata":{}}')],
    ['weight_map not an object', enc('{"weight_map":[]}')],
    ['non-string shard', wm({ a: 1 })],
    ['duplicate key, different shards', enc('{"weight_map":{"a":"x.safetensors","a":"y.safetensors"}}')],
    ['invalid UTF-8', new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d])],
    ...['../x.safetensors', '/etc/passwd', 'a/b.safetensors', 'a\\b.safetensors', '', '.', '..', 'C:x', 'x\0y', 'x'.repeat(256)].map(
      (name) => [`unsafe shard name ${JSON.stringify(name)}`, wm({ a: name })] as [string, Uint8Array],
    ),
  ])('InvalidIndex: %s', async (_, bytes) => {
    expect(await codeOf(() => parseShardIndex(bytes))).toBe('InvalidIndex');
  });
  it('enforces size, entry and shard limits', async () => {
    const many = wm(Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`t${i}`, `s${i % 5}.safetensors`])));
    expect(parseShardIndex(many).shardFiles.length).toBe(5);
    expect(await codeOf(() => parseShardIndex(many, { maxBytes: many.byteLength - 1 }))).toBe('InvalidIndex');
    expect(await codeOf(() => parseShardIndex(many, { maxEntries: 19 }))).toBe('InvalidIndex');
    expect(await codeOf(() => parseShardIndex(many, { maxShards: 4 }))).toBe('InvalidIndex');
  });
  it('hostile bytes: truncations, flips and random text give a result or InvalidIndex, nothing else', () => {
    const valid = enc(formatShardIndex(30, [['a', 'model-00001-of-00002.safetensors'], ['b\u{1F600}', 'model-00002-of-00002.safetensors']]));
    const mutated = fc.oneof(
      fc.nat(valid.byteLength).map((n) => valid.slice(0, n)),
      fc.tuple(fc.nat(valid.byteLength - 1), fc.integer({ min: 0, max: 255 })).map(([i, b]) => {
        const m = valid.slice();
        m[i] = b;
        return m;
      }),
      fc.uint8Array({ maxLength: 200 }),
      fc.json().map(enc),
    );
    fc.assert(
      fc.property(mutated, (bytes) => {
        try {
          const idx = parseShardIndex(bytes);
          for (const f of idx.shardFiles) expect(isSafeShardName(f)).toBe(true);
        } catch (e) {
          expect(e).toBeInstanceOf(TensorportError);
          expect((e as TensorportError).code).toBe('InvalidIndex');
        }
      }),
      { numRuns: 2000 },
    );
  });
  it('a malformed total_size is a warning; the same entry twice is fine', () => {
    for (const ts of ['-1', '1.5', '"12"', '18446744073709551616']) {
      const idx = parseShardIndex(enc(`{"metadata":{"total_size":${ts}},"weight_map":{"a":"x.safetensors","a":"x.safetensors"}}`));
      expect(idx.totalSize).toBe(null);
      expect(idx.warnings.map((w) => w.code)).toEqual(['IndexTotalSizeInvalid']);
    }
    expect(isSafeShardName('model-00001-of-00002.safetensors')).toBe(true);
  });
});

describe('openShardedCheckpoint: index and shards must agree', () => {
  async function setup(): Promise<MemoryDir> {
    const dir = new MemoryDir();
    await writeSharded([t('a', 'U8', 10), t('b', 'U8', 10), t('c', 'U8', 10)], null, dir.open, { maxShardSize: 20 });
    return dir;
  }
  const index = (map: Record<string, string>, total = 30) => enc(formatShardIndex(total, Object.entries(map)));
  const f = (k: number) => `model-0000${k}-of-00002.safetensors`;

  it('accepts the written index; warns about a wrong total_size', async () => {
    const dir = await setup();
    const ok = await openShardedCheckpoint(index({ a: f(1), b: f(1), c: f(2) }), dir.source);
    expect(ok.tensors.map((x) => x.name)).toEqual(['a', 'b', 'c']);
    const off = await openShardedCheckpoint(index({ a: f(1), b: f(1), c: f(2) }, 31), dir.source);
    expect(off.warnings.map((w) => w.code)).toEqual(['IndexTotalSizeMismatch']);
  });
  it.each([
    ['ShardMismatch', 'a weight_map entry missing from its shard', { a: f(1), b: f(1), c: f(2), d: f(2) }],
    ['ShardMismatch', 'a shard tensor missing from weight_map', { a: f(1), c: f(2) }],
    ['ShardMismatch', 'a tensor mapped to the wrong shard', { a: f(2), b: f(1), c: f(2) }],
    ['ShardMissing', 'a shard that does not exist', { a: f(1), b: f(1), c: f(2), x: 'model-00003-of-00003.safetensors' }],
  ])('%s: %s (and every opened shard is closed)', async (code, _, map) => {
    const dir = await setup();
    expect(await codeOf(openShardedCheckpoint(index(map), dir.source))).toBe(code);
    expect([...dir.closed].sort()).toEqual([f(1), f(2)]);
  });
  it('a name in two shards is a ShardMismatch that names both', async () => {
    const dir = new MemoryDir();
    await writeSharded([t('a', 'U8', 10), t('b', 'U8', 10)], null, dir.open, { maxShardSize: 15 });
    const other = new MemoryDir();
    await writeSharded([t('a', 'U8', 10)], null, other.open);
    dir.sinks.set('extra.safetensors', other.sinks.get('model.safetensors')!);
    const err = await openShardedCheckpoint(index({ a: 'model-00001-of-00002.safetensors', b: 'extra.safetensors' }), dir.source).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TensorportError);
    expect((err as TensorportError).code).toBe('ShardMismatch');
    expect((err as TensorportError).message).toMatch(/model-00002-of-00002|extra/);
  });
  it('a corrupt shard fails with its own code and the shard named', async () => {
    const dir = await setup();
    const bad = new MemorySink();
    await bad.write(new Uint8Array([1, 2, 3]));
    await bad.commit();
    dir.sinks.set(f(2), bad);
    const err = (await openShardedCheckpoint(index({ a: f(1), b: f(2), c: f(3) }), dir.source).catch((e: unknown) => e)) as TensorportError;
    expect(err.code).toBe('HeaderTooSmall');
    expect(err.path).toBe(f(2));
  });
});

const py = await requirePython(['safetensors', 'numpy']);

describe.skipIf(!py)('interop', () => {
  it('index text equals json.dumps(indent=2, sort_keys=True) for awkward names', async () => {
    const names = ['b', '10', '2', 'a"q', 'back\\slash', 'ctl\u0001\n\t', 'del\u007f', 'é', '\uFFFF', '\u{10000}', '\u{1F600}', '__proto__', ''];
    const map = names.map((n, i) => [n, shardFileName(i % 3, 3)] as [string, string]);
    const ours = formatShardIndex(123456789012, map);
    const theirs = await runPython(
      py!.exe,
      'import sys, json\nm = json.load(sys.stdin)\nsys.stdout.write(json.dumps({"metadata": {"total_size": 123456789012}, "weight_map": dict(m)}, indent=2, sort_keys=True) + "\\n")',
      { input: JSON.stringify(map) },
    );
    expect(ours).toBe(theirs);
    expect(formatShardIndex(0, [])).toBe(await runPython(py!.exe, 'import json,sys; sys.stdout.write(json.dumps({"metadata":{"total_size":0},"weight_map":{}}, indent=2, sort_keys=True)+"\\n")'));
  });
  it('each shard loads in safetensors with the metadata', async () => {
    const dir = new MemoryDir();
    await writeSharded([t('x', 'F32', 4), t('y', 'I64', 4), t('z', 'U8', 4)], { format: 'pt' }, dir.open, { maxShardSize: 20 });
    const files = Object.fromEntries([...dir.sinks.keys()].filter((n) => n.endsWith('.safetensors')).map((n) => [n, Buffer.from(dir.file(n)).toString('base64')]));
    const out = await runPython(
      py!.exe,
      `import sys, json, base64
from safetensors import deserialize
from safetensors.numpy import load
files = json.load(sys.stdin)
res = {}
for name, b64 in sorted(files.items()):
    raw = base64.b64decode(b64)
    res[name] = sorted(load(raw).keys())
print(json.dumps(res))`,
      { input: JSON.stringify(files) },
    );
    expect(JSON.parse(out)).toEqual({ 'model-00001-of-00002.safetensors': ['y'], 'model-00002-of-00002.safetensors': ['x', 'z'] });
  });
});
