import { BytesSource } from '@tensorport/core';
import { describe, expect, it } from 'vitest';
import { openTorchCheckpoint, scanCheckpoint } from '../src/index.ts';
import { binunicode, global, pk } from './helpers/pickle-bytes.ts';

/** A legacy stream by hand: magic, protocol 1001, sys_info, the object, the key list, then storages. */
function legacy(object: Uint8Array, keys: string[], storages: Array<{ numel: number; data: Uint8Array }>, sysInfo = pk(0x80, 2, '}', '.')): Uint8Array {
  const magic = pk(0x80, 2, 0x8a, 10, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19, '.');
  const version = pk(0x80, 2, 0x4d, 0xe9, 0x03, '.');
  const list = pk(0x80, 2, ']', '(', keys.flatMap(binunicode), 'e', '.');
  const data = storages.flatMap((s) => {
    const n = new Uint8Array(8);
    new DataView(n.buffer).setBigUint64(0, BigInt(s.numel), true);
    return [...n, ...s.data];
  });
  return pk(magic, version, sysInfo, object, list, data);
}

const f32 = (xs: number[]): Uint8Array => new Uint8Array(new Float32Array(xs).buffer);
const tensor = (key: string, numel: number, view: number[] | null, shape: number, offset = 0): Uint8Array =>
  pk(global('torch._utils', '_rebuild_tensor_v2'), '(', '(', binunicode('storage'), global('torch', 'FloatStorage'), binunicode(key), binunicode('cpu'), 'K', numel,
    view ? pk('(', binunicode(`${key}v`), 'K', view[0]!, 'K', view[1]!, 't') : pk('N'), 't', 'Q', 'K', offset, 'K', shape, 0x85, 'K', 1, 0x85, 0x89, global('collections', 'OrderedDict'), ')', 'R', 't', 'R');

describe('legacy stream details', () => {
  it('reads view_metadata storage views (very old files) inside their root storage', async () => {
    // root '7' = [0..5]; 'v' views elements [2, 5) and takes 2 from offset 1 of the view: [3, 4]
    const object = pk(0x80, 2, '}', '(', binunicode('w'), tensor('7', 6, null, 6), binunicode('v'), tensor('7', 6, [2, 3], 2, 1), 'u', '.');
    const c = await openTorchCheckpoint(legacy(object, ['7'], [{ numel: 6, data: f32([0, 1, 2, 3, 4, 5]) }]));
    const values: Record<string, number[]> = {};
    for (const t of c.tensors) {
      const parts: number[] = [];
      for await (const ch of t.chunks()) parts.push(...ch);
      values[t.name] = [...new Float32Array(Uint8Array.from(parts).buffer)];
    }
    expect(values).toEqual({ w: [0, 1, 2, 3, 4, 5], v: [3, 4] });
  });
  it('refuses a view outside its root storage', async () => {
    const object = pk(0x80, 2, '}', '(', binunicode('v'), tensor('7', 6, [4, 3], 2), 'u', '.');
    await expect(openTorchCheckpoint(legacy(object, ['7'], [{ numel: 6, data: f32([0, 1, 2, 3, 4, 5]) }]))).rejects.toMatchObject({ code: 'PickleInvalid', message: expect.stringMatching(/outside its storage/) });
  });
  it('refuses header pickles with globals, a sys_info that is not a dict, keys never referenced or listed twice', async () => {
    const object = pk(0x80, 2, '}', '(', binunicode('w'), tensor('7', 2, null, 2), 'u', '.');
    const data = [{ numel: 2, data: f32([1, 2]) }];
    await expect(openTorchCheckpoint(legacy(object, ['7'], data, pk(0x80, 2, global('collections', 'OrderedDict'), ')', 'R', '.')))).rejects.toMatchObject({ message: expect.stringMatching(/header pickle .* references collections.OrderedDict/) });
    await expect(openTorchCheckpoint(legacy(object, ['7'], data, pk(0x80, 2, ']', '.')))).rejects.toMatchObject({ message: expect.stringMatching(/sys_info/) });
    await expect(openTorchCheckpoint(legacy(object, ['8'], data))).rejects.toMatchObject({ message: expect.stringMatching(/never references/) });
    await expect(openTorchCheckpoint(legacy(object, ['7', '7'], [...data, ...data]))).rejects.toMatchObject({ message: expect.stringMatching(/listed twice/) });
    await expect(openTorchCheckpoint(legacy(object, [], []))).rejects.toMatchObject({ code: 'TorchInvalidCheckpoint', tensor: 'w' });
  });
  it('refuses BUILD on a tensor, which torch applies with set_ (other bytes than the stored ones)', async () => {
    const object = pk(0x80, 2, '}', '(', binunicode('w'), tensor('7', 2, null, 2), ')', 'b', 'u', '.');
    await expect(openTorchCheckpoint(legacy(object, ['7'], [{ numel: 2, data: f32([1, 2]) }]))).rejects.toMatchObject({ code: 'PickleInvalid', message: expect.stringMatching(/BUILD on a tensor/) });
  });
  it('scans exactly the five pickles, not the storage bytes after them', async () => {
    const object = pk(0x80, 2, '}', '(', binunicode('w'), tensor('7', 2, null, 2), 'u', '.');
    const r = await scanCheckpoint(legacy(object, ['7'], [{ numel: 2, data: pk(0x80, 0x63, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80) }]));
    expect(r).toMatchObject({ format: 'torch-legacy', safe: true, pickles: 5 });
  });
});

describe('reading pickles from a stream in windows', () => {
  it('fails at once on a length past the end of the file, and with PickleLimitExceeded past maxPickleBytes', async () => {
    // BINBYTES8 of 2^40 bytes at the start of a 1 MiB file: no window growth can help
    const big = new Uint8Array(1 << 20);
    big.set([0x80, 4, 0x8e, 0, 0, 0, 0, 0, 1, 0, 0]);
    const read: number[] = [];
    const source = new BytesSource(big);
    const spy = { ...source, size: source.size, name: 'big', bytesRead: 0, read: (o: number, n: number) => { read.push(n); return source.read(o, n); }, close: async () => {} };
    await expect(scanCheckpoint(spy)).resolves.toMatchObject({ safe: false, findings: [{ code: 'PickleInvalid' }] });
    expect(read.filter((n) => n > 512)).toEqual([65536]); // the first block is read whole (a tar header?)
    // a 300 KiB string in a pickle, with maxPickleBytes 100 KiB
    const long = pk(0x80, 2, 0x58, 0, 0xb0, 0x04, 0, new Array<number>(300 * 1024).fill(0x61), '.');
    await expect(scanCheckpoint(long, { maxPickleBytes: 100 * 1024 })).resolves.toMatchObject({ findings: [{ code: 'PickleLimitExceeded' }] });
    await expect(scanCheckpoint(long)).resolves.toMatchObject({ safe: true, pickles: 1 });
  });
});
