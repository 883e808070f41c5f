import { BytesSource, MemorySink, TensorportError } from '@tensorport/core';
import { nodeZlibCodec } from '@tensorport/core/node';
import { describe, expect, it } from 'vitest';
import { openTorchCheckpoint, scanCheckpoint, writeTorchCheckpoint } from '../src/index.ts';
import { binunicode, global, pk } from './helpers/pickle-bytes.ts';
import { digest } from './helpers/digest.ts';
import { readBytes, SAMPLES } from './helpers/paths.ts';
import { statePickle, torchZip } from './helpers/torch-zip-bytes.ts';

const f32 = (n: number): Uint8Array => new Uint8Array(new Float32Array(Array.from({ length: n }, (_, i) => i)).buffer);

async function refused(bytes: Uint8Array, opts = {}): Promise<TensorportError> {
  const e = await openTorchCheckpoint(new BytesSource(bytes, 'x.pt'), opts).then(() => null, (x: unknown) => x);
  expect(e).toBeInstanceOf(TensorportError);
  return e as TensorportError;
}

describe('hostile ZIP checkpoints', () => {
  const ok = { 't/version': '3\n' };
  it('accepts the well-formed baseline', async () => {
    const c = await openTorchCheckpoint(await torchZip({ 't/data.pkl': statePickle([{ name: 'w', key: '0', numel: 6, shape: [2, 3], stride: [3, 1] }]), 't/data/0': f32(6), ...ok }));
    expect(c.tensors.map((t) => [t.name, t.shape])).toEqual([['w', [2, 3]]]);
  });
  it('refuses a tensor that reaches past its storage', async () => {
    const e = await refused(await torchZip({ 't/data.pkl': statePickle([{ name: 'w', key: '0', numel: 6, offset: 1, shape: [2, 3], stride: [3, 1] }]), 't/data/0': f32(6), ...ok }));
    expect(e.code).toBe('TorchStorageMismatch');
    expect(e.tensor).toBe('w');
  });
  it('refuses sizes and strides whose extent overflows, computed exactly', async () => {
    const e = await refused(await torchZip({ 't/data.pkl': statePickle([{ name: 'w', key: '0', numel: 6, shape: [65535, 65535, 65535, 65535, 65535], stride: [65535, 65535, 65535, 65535, 65535] }]), 't/data/0': f32(6), ...ok }));
    expect(e.code).toBe('TorchStorageMismatch');
  });
  it('bounds what an expanded (stride 0) view may materialise', async () => {
    const bytes = await torchZip({ 't/data.pkl': statePickle([{ name: 'w', key: '0', numel: 1, shape: [60000, 60000], stride: [0, 0] }]), 't/data/0': f32(1), ...ok });
    const e = await refused(bytes);
    expect(e.code).toBe('TorchUnsupportedTensor');
    expect(e.message).toMatch(/maxViewBytes/);
    // a 4-element column with stride 1000 spans 12 004 bytes of its storage: the span counts too
    const column = await torchZip({ 't/data.pkl': statePickle([{ name: 'c', key: '0', numel: 4000, shape: [4], stride: [1000] }]), 't/data/0': f32(4000), ...ok });
    expect((await refused(column, { maxViewBytes: 12_000 })).message).toMatch(/spanning 12004 bytes/);
    const c = await openTorchCheckpoint(column, { maxViewBytes: 12_004 });
    const got: number[] = [];
    for await (const ch of c.tensors[0]!.chunks()) got.push(...new Float32Array(ch.slice().buffer));
    expect(got).toEqual([0, 1000, 2000, 3000]);
    const small = await openTorchCheckpoint(await torchZip({ 't/data.pkl': statePickle([{ name: 'w', key: '0', numel: 1, shape: [3, 2], stride: [0, 0] }]), 't/data/0': f32(1), ...ok }));
    expect(small.tensors[0]!.byteLength).toBe(24);
    const w = small.tensors[0]!;
    expect(await digest(w)).toBe(await digest({ name: w.name, dtype: w.dtype, shape: w.shape, byteLength: w.byteLength, chunks: async function* () { yield new Uint8Array(24); } }));
  });
  it('refuses one storage key declared with two types or sizes', async () => {
    const pkl = statePickle([{ name: 'a', key: '0', numel: 4, shape: [4], stride: [1] }, { name: 'b', cls: 'IntStorage', key: '0', numel: 4, shape: [4], stride: [1] }]);
    expect((await refused(await torchZip({ 't/data.pkl': pkl, 't/data/0': f32(4), ...ok }))).code).toBe('TorchStorageMismatch');
    const pkl2 = statePickle([{ name: 'a', key: '0', numel: 4, shape: [4], stride: [1] }, { name: 'b', key: '0', numel: 2, shape: [2], stride: [1] }]);
    expect((await refused(await torchZip({ 't/data.pkl': pkl2, 't/data/0': f32(4), ...ok }))).code).toBe('TorchStorageMismatch');
  });
  it('refuses storage keys that are not decimal (no path tricks into other members)', async () => {
    const e = await refused(await torchZip({ 't/data.pkl': statePickle([{ name: 'w', key: '../data.pkl', numel: 1, shape: [1], stride: [1] }]), ...ok }));
    expect(e.code).toBe('PickleInvalid');
    expect(e.message).toMatch(/decimal digits/);
  });
  it('refuses a missing storage member, bytes after STOP, a bad byteorder and TorchScript', async () => {
    const pkl = statePickle([{ name: 'w', key: '0', numel: 1, shape: [1], stride: [1] }]);
    expect((await refused(await torchZip({ 't/data.pkl': pkl, ...ok }))).message).toMatch(/no member t\/data\/0/);
    expect((await refused(await torchZip({ 't/data.pkl': new Uint8Array([...pkl, 0x80, 0x02]), 't/data/0': f32(1), ...ok }))).message).toMatch(/2 bytes after STOP/);
    expect((await refused(await torchZip({ 't/data.pkl': pkl, 't/data/0': f32(1), 't/byteorder': 'middle', ...ok }))).message).toMatch(/byteorder/);
    const ts = await refused(await torchZip({ 't/data.pkl': pkl, 't/constants.pkl': pkl, 't/data/0': f32(1), ...ok }));
    expect(ts.code).toBe('TorchUnsupportedArchive');
    expect(ts.message).toMatch(/TorchScript/);
    expect((await refused(await torchZip({ 't/data.pkl': pkl, 't/data/0': f32(1) }))).message).toMatch(/no version record/);
  });
  it('scans every pickle member, including one not named .pkl, and skips storage bytes', async () => {
    const evil = new Uint8Array([0x80, 2, ...new TextEncoder().encode('cposix\nsystem\n'), 0x29, 0x52, 0x2e]);
    const fake = new Uint8Array([0x80, 0x80, 0x80, 0x80]); // a storage that happens to start like a pickle
    const r = await scanCheckpoint(await torchZip({ 't/data.pkl': statePickle([{ name: 'w', key: '0', numel: 1, shape: [1], stride: [1] }]), 't/data/0': fake, 't/extra.bin': evil, ...ok }));
    expect(r.safe).toBe(false);
    expect(r.globals).toContain('posix.system');
    expect(r.pickles).toBe(2);
  });
});

describe('hostile legacy checkpoints (mutations of legacy_shared.pt)', () => {
  // [0,15) magic, [15,21) protocol version, [21,137) sys_info, [137,375) object, [375,398) keys, then
  // int64 numel 4 + 16 bytes of float32 for storage '698172512'
  const good = readBytes(`${SAMPLES}legacy_shared.pt`);
  const edit = (at: number, bytes: number[]): Uint8Array => {
    const b = good.slice();
    b.set(bytes, at);
    return b;
  };
  it('reads the original', async () => {
    expect((await openTorchCheckpoint(good)).tensors.map((t) => t.name)).toEqual(['a', 'b']);
  });
  it('refuses a wrong magic number and a wrong protocol version', async () => {
    expect((await refused(edit(4, [0x6d]))).message).toMatch(/magic number/);
    expect((await refused(edit(18, [0xea]))).message).toMatch(/protocol version 1002/);
  });
  it('refuses a storage whose stored element count disagrees with the object', async () => {
    const e = await refused(edit(398, [5]));
    expect(e.code).toBe('TorchStorageMismatch');
  });
  it('refuses storage data cut short', async () => {
    expect((await refused(good.subarray(0, good.byteLength - 1))).message).toMatch(/runs past the end/);
    expect((await refused(good.subarray(0, 400))).message).toMatch(/truncated/);
  });
  it('refuses a pickle cut off before STOP', async () => {
    expect((await refused(good.subarray(0, 300))).code).toBe('PickleInvalid');
  });
});

describe('names and refused tensor kinds', () => {
  const ok = { 't/version': '3\n' };
  it('keeps tensor names like __proto__ and constructor as plain names through read and write', async () => {
    const names = ['__proto__', 'constructor', 'toString', 'a.b'];
    const pkl = statePickle(names.map((name, i) => ({ name, key: String(i), numel: 1, shape: [1], stride: [1] })));
    const members: Record<string, Uint8Array | string> = { 't/data.pkl': pkl, ...ok };
    names.forEach((_, i) => { members[`t/data/${i}`] = f32(1); });
    const c = await openTorchCheckpoint(await torchZip(members));
    expect(c.tensors.map((t) => t.name)).toEqual(names);
    const sink = new MemorySink();
    await writeTorchCheckpoint(c, sink);
    expect((await openTorchCheckpoint(sink.bytes())).tensors.map((t) => t.name)).toEqual(names);
    expect(Object.prototype).not.toHaveProperty('polluted');
  });
  for (const [fn, what] of [['_rebuild_meta_tensor_no_storage', 'meta tensor'], ['_rebuild_nested_tensor', 'nested tensor'], ['_rebuild_wrapper_subclass', 'wrapper tensor subclass']] as const) {
    it(`refuses a ${what} by name`, async () => {
      const pkl = pk(0x80, 2, global('collections', 'OrderedDict'), ')', 'R', binunicode('m'), global('torch._utils', fn), ')', 'R', 's', '.');
      const e = await refused(await torchZip({ 't/data.pkl': pkl, ...ok }));
      expect(e).toMatchObject({ code: 'TorchUnsupportedTensor', tensor: 'm' });
      expect(e.message).toContain(what);
      const skipped = await openTorchCheckpoint(await torchZip({ 't/data.pkl': pkl, ...ok }), { skipUnsupported: true });
      expect(skipped.warnings.map((w) => [w.code, w.tensor])).toEqual([['TorchTensorSkipped', 'm']]);
    });
  }
});

describe('deflated storages', () => {
  it('stream contiguous slices, gather views and swap big-endian bytes across inflate chunk edges', async () => {
    const values = Array.from({ length: 40_000 }, (_, i) => i);
    const be = new Uint8Array(new Float32Array(values).buffer).slice();
    for (let p = 0; p < be.length; p += 4) be.subarray(p, p + 4).reverse();
    const pkl = statePickle([
      { name: 'slice', key: '0', numel: 40_000, offset: 7, shape: [30_000], stride: [1] },
      { name: 'column', key: '0', numel: 40_000, offset: 3, shape: [4], stride: [10_000] },
    ]);
    const bytes = await torchZip({ 't/data.pkl': pkl, 't/data/0': be, 't/byteorder': 'big', 't/version': '3\n' }, { codec: nodeZlibCodec, names: ['t/data/0'] });
    const c = await openTorchCheckpoint(bytes, { zipCodec: nodeZlibCodec });
    const read = async (i: number, chunk: number): Promise<number[]> => {
      const parts: number[] = [];
      for await (const ch of c.tensors[i]!.chunks(chunk)) {
        expect(ch.byteLength).toBeLessThanOrEqual(chunk);
        parts.push(...ch);
      }
      return [...new Float32Array(Uint8Array.from(parts).buffer)];
    };
    expect(await read(0, 4 * 1001)).toEqual(values.slice(7, 30_007));
    expect(await read(1, 1 << 20)).toEqual([3, 10_003, 20_003, 30_003]);
    expect(c.tensors.every((t) => t.range === undefined)).toBe(true);
    await expect(openTorchCheckpoint(bytes)).rejects.toMatchObject({ code: 'TorchUnsupportedArchive', message: expect.stringMatching(/deflated; pass zipCodec/) });
  });
});
