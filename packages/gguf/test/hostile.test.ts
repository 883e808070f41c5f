import { BytesSource, TensorportError } from '@tensorport/core';
import { describe, expect, it } from 'vitest';
import { HeaderWriter } from '../src/header-writer.ts';
import { openGguf, type GgufReadOptions } from '../src/index.ts';
import { fixture } from './helpers.ts';

interface Ti {
  name: string;
  dims: Array<number | bigint>;
  type: number;
  offset: number | bigint;
}

/** A hand-made file: `kv` writes whole KV records; tensor infos as given, then `data` zero bytes. */
function raw(opts: { version?: number; nKv?: bigint; nTensors?: bigint; kv?: Array<(w: HeaderWriter) => void>; tensors?: Ti[]; data?: number; align?: number }): Uint8Array {
  const w = new HeaderWriter();
  w.bytes(new Uint8Array([0x47, 0x47, 0x55, 0x46]));
  w.u32(opts.version ?? 3);
  const kv = opts.kv ?? [];
  const tensors = opts.tensors ?? [];
  w.u64(opts.nTensors ?? BigInt(tensors.length));
  w.u64(opts.nKv ?? BigInt(kv.length));
  for (const k of kv) k(w);
  for (const t of tensors) {
    w.string(t.name);
    w.u32(t.dims.length);
    for (const d of t.dims) w.u64(d);
    w.u32(t.type);
    w.u64(t.offset);
  }
  const a = opts.align ?? 32;
  w.zeros((a - (w.length % a)) % a);
  w.zeros(opts.data ?? 0);
  return w.result();
}

const kvU32 = (key: string, v: number) => (w: HeaderWriter) => {
  w.string(key);
  w.u32(4);
  w.u32(v);
};

async function refuse(bytes: Uint8Array, code: string, options?: GgufReadOptions): Promise<TensorportError> {
  try {
    await openGguf(new BytesSource(bytes, 'x.gguf'), options);
  } catch (e) {
    expect(e).toBeInstanceOf(TensorportError);
    expect((e as TensorportError).code, (e as Error).message).toBe(code);
    return e as TensorportError;
  }
  throw new Error(`accepted; expected ${code}`);
}

const f32 = (name: string, dims: number[], offset = 0): Ti => ({ name, dims, type: 0, offset });

describe('header', () => {
  it('refuses a wrong magic, versions 0, 1 and 4, and big-endian files', async () => {
    const ok = raw({});
    const bad = ok.slice();
    bad[0] = 0x46;
    expect((await refuse(bad, 'GgufInvalidMagic')).offset).toBe(0);
    for (const version of [0, 1, 4]) expect((await refuse(raw({ version }), 'GgufUnsupportedVersion')).offset).toBe(4);
    await refuse(raw({ version: 0x03000000 }), 'GgufBigEndian');
    // A real one, from GGUFWriter(endianess=BIG).
    expect((await refuse(await fixture('big-endian.gguf'), 'GgufBigEndian')).offset).toBe(4);
    expect((await openGguf(new BytesSource(raw({ version: 2 })))).version).toBe(2);
  });

  it('refuses files that end early, at every length of a real file', async () => {
    const tiny = await fixture('tiny.gguf');
    const g = await openGguf(new BytesSource(tiny));
    const codes = new Set<string>();
    // The last tensor's trailing padding is optional (llama.cpp loads such files too).
    const end = g.tensors[1]!.fileOffset + g.tensors[1]!.byteLength;
    expect((await openGguf(new BytesSource(tiny.subarray(0, end)))).tensors).toHaveLength(2);
    for (let n = 0; n < end; n++) {
      try {
        await openGguf(new BytesSource(tiny.subarray(0, n)));
        throw new Error(`a ${n}-byte prefix was accepted`);
      } catch (e) {
        expect(e, `cut at ${n}`).toBeInstanceOf(TensorportError);
        codes.add((e as TensorportError).code);
        if (n < g.dataOffset - 18) expect(['GgufTruncated', 'GgufLimitExceeded'], `cut at ${n}`).toContain((e as TensorportError).code);
      }
    }
    expect([...codes].sort()).toEqual(['GgufLimitExceeded', 'GgufTensorOutOfBounds', 'GgufTruncated']);
  });

  it('bounds counts, strings and arrays by the file before allocating', async () => {
    await refuse(raw({ nKv: 2n ** 62n }), 'GgufLimitExceeded');
    await refuse(raw({ nTensors: 2n ** 40n }), 'GgufLimitExceeded');
    const longKey = (w: HeaderWriter) => w.u64(2n ** 62n);
    expect((await refuse(raw({ kv: [longKey], data: 64 }), 'GgufLimitExceeded')).offset).toBe(24);
    const shortKey = (w: HeaderWriter) => w.u64(1000n);
    await refuse(raw({ kv: [shortKey], data: 64 }), 'GgufTruncated');
    const bigArray = (n: bigint, type: number) => (w: HeaderWriter) => {
      w.string('a');
      w.u32(9);
      w.u32(type);
      w.u64(n);
    };
    await refuse(raw({ kv: [bigArray(2n ** 31n, 0)], data: 64 }), 'GgufLimitExceeded');
    await refuse(raw({ kv: [bigArray(1000n, 4)] }), 'GgufLimitExceeded');
    await refuse(raw({ kv: [bigArray(1000n, 8)] }), 'GgufLimitExceeded');
    await refuse(raw({ kv: [bigArray(3n, 8)], data: 64 }), 'GgufLimitExceeded', { maxHeaderObjects: 2 });
  });

  it('bounds array nesting', async () => {
    const deep = (depth: number) => (w: HeaderWriter) => {
      w.string('deep');
      w.u32(9);
      for (let i = 0; i < depth - 1; i++) {
        w.u32(9);
        w.u64(1n);
      }
      w.u32(0);
      w.u64(1n);
      w.u8(1);
    };
    const ok = await openGguf(new BytesSource(raw({ kv: [deep(8)] })));
    expect(ok.metadata.get('deep')).toBe('[[[[[[[[1]]]]]]]]');
    await refuse(raw({ kv: [deep(9)] }), 'GgufLimitExceeded');
  });

  it('refuses unknown value types, empty, duplicate and non-UTF-8 keys, and BOOL bytes other than 0/1', async () => {
    const typed = (type: number) => (w: HeaderWriter) => {
      w.string('k');
      w.u32(type);
      w.u32(0);
    };
    await refuse(raw({ kv: [typed(13)] }), 'GgufInvalidValueType');
    expect((await refuse(raw({ kv: [kvU32('', 1)] }), 'GgufInvalidKey')).offset).toBe(24);
    await refuse(raw({ kv: [kvU32('a.b', 1), kvU32('a.b', 2)] }), 'GgufDuplicateKey');
    const badKey = (w: HeaderWriter) => {
      w.u64(3n);
      w.bytes(new Uint8Array([0x6b, 0xff, 0xfe]));
      w.u32(4);
      w.u32(0);
    };
    await refuse(raw({ kv: [badKey] }), 'GgufInvalidUtf8');
    const bool = (b: number) => (w: HeaderWriter) => {
      w.string('b');
      w.u32(7);
      w.u8(b);
    };
    await refuse(raw({ kv: [bool(2)] }), 'GgufInvalidValue');
    expect((await openGguf(new BytesSource(raw({ kv: [bool(1)] })))).kv.get('b')).toEqual({ type: 'BOOL', value: true });
  });

  it('requires general.alignment to be a UINT32 power of two', async () => {
    await refuse(raw({ kv: [kvU32('general.alignment', 48)] }), 'GgufInvalidAlignment');
    await refuse(raw({ kv: [kvU32('general.alignment', 0)] }), 'GgufInvalidAlignment');
    const u64 = (w: HeaderWriter) => {
      w.string('general.alignment');
      w.u32(10);
      w.u64(32n);
    };
    await refuse(raw({ kv: [u64] }), 'GgufInvalidAlignment');
    const g = await openGguf(new BytesSource(raw({ kv: [kvU32('general.alignment', 8)], tensors: [f32('t', [2])], align: 8, data: 8 })));
    expect(g.alignment).toBe(8);
    expect(g.dataOffset % 8).toBe(0);
  });
});

describe('tensor infos', () => {
  it('accepts a well-formed file', async () => {
    const g = await openGguf(new BytesSource(raw({ tensors: [f32('a', [3, 2]), f32('b', [4], 32)], data: 64 })));
    expect(g.tensors.map((t) => [t.name, t.shape])).toEqual([['a', [2, 3]], ['b', [4]]]);
  });

  it('refuses bad names, dims and types with the tensor name', async () => {
    const cases: Array<[Ti[], string]> = [
      [[f32('', [1])], 'GgufInvalidTensorInfo'],
      [[f32('x'.repeat(64), [1])], 'GgufInvalidTensorInfo'],
      [[f32('t', [1, 1, 1, 1, 1])], 'GgufInvalidTensorInfo'],
      [[{ name: 't', dims: [2n ** 63n], type: 0, offset: 0 }], 'GgufInvalidTensorInfo'],
      [[{ name: 't', dims: [2n ** 32n, 2n ** 32n], type: 0, offset: 0 }], 'GgufInvalidTensorInfo'],
      [[{ name: 't', dims: [32], type: 4, offset: 0 }], 'GgufUnknownType'],
      [[{ name: 't', dims: [32], type: 43, offset: 0 }], 'GgufUnknownType'],
      [[{ name: 't', dims: [33], type: 8, offset: 0 }], 'GgufBlockMismatch'],
      [[f32('t', [2], 8)], 'GgufMisalignedOffset'],
      [[f32('t', [2], 2n ** 40n as unknown as number)], 'GgufTensorOutOfBounds'],
      [[f32('t', [100])], 'GgufTensorOutOfBounds'],
      [[f32('t', [16]), f32('u', [16], 32)], 'GgufTensorOverlap'],
      [[f32('t', [2]), f32('t', [2], 32)], 'DuplicateTensorName'],
    ];
    for (const [tensors, code] of cases) {
      const e = await refuse(raw({ tensors, data: 128 }), code);
      expect(e.tensor, code).toBe(tensors[tensors.length - 1]!.name);
    }
    expect((await openGguf(new BytesSource(raw({ tensors: [f32('x'.repeat(64), [1])], data: 32 })), { maxTensorNameBytes: 64 })).tensors).toHaveLength(1);
  });

  it('warns about layouts llama.cpp refuses (gaps, reordering) and refuses them with strictLayout', async () => {
    const gap = raw({ tensors: [f32('a', [2]), f32('b', [2], 64)], data: 96 });
    const g = await openGguf(new BytesSource(gap));
    expect(g.warnings.map((w) => w.code)).toEqual(['GgufNonContiguousLayout']);
    await refuse(gap, 'GgufTensorOverlap', { strictLayout: true });
  });

  it('never fails with anything but a TensorportError on corrupted bytes', async () => {
    const base = await fixture('kitchen.gguf');
    let seed = 12345;
    const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) / 2 ** 24;
    let refused = 0;
    for (let i = 0; i < 400; i++) {
      const b = base.slice();
      for (let k = 0; k < 3; k++) b[Math.floor(rand() * 1024)] = Math.floor(rand() * 256);
      try {
        await openGguf(new BytesSource(b));
      } catch (e) {
        expect(e).toBeInstanceOf(TensorportError);
        refused++;
      }
    }
    expect(refused).toBeGreaterThan(0);
  });
});
