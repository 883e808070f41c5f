import { BytesSource, MemorySink, TensorportError, type TensorDescriptor } from '@tensorport/core';
import { describe, expect, it } from 'vitest';
import { loadPickle, openTorchCheckpoint, scanCheckpoint, StorageTable, writeTorchCheckpoint } from '../src/index.ts';
import { WEIGHTS_ONLY_OPCODES } from '../src/pickle/opcodes.ts';
import { runPickle } from '../src/pickle/interpreter.ts';
import { openZip } from '@tensorport/core';
import { digest } from './helpers/digest.ts';
import { FIXTURES, readBytes } from './helpers/paths.ts';

const fixture = (f: string, opts = {}) => openTorchCheckpoint(new BytesSource(readBytes(`${FIXTURES}checkpoints/${f}`), f), opts);

async function roundTrip(src: { tensors: readonly TensorDescriptor[]; metadata: ReadonlyMap<string, string> | null }, opts = {}) {
  const sink = new MemorySink('out.pt');
  const report = await writeTorchCheckpoint(src, sink, opts);
  return { bytes: sink.bytes(), report };
}

describe('writeTorchCheckpoint', () => {
  it('writes what the reader reads back, byte for byte, for every dtype torch and safetensors share', async () => {
    const src = await fixture('dtypes.pt');
    const { bytes } = await roundTrip(src);
    const back = await openTorchCheckpoint(bytes);
    expect(back.tensors.map((t) => [t.name, t.dtype, t.shape])).toEqual(src.tensors.map((t) => [t.name, t.dtype, t.shape]));
    for (const [i, t] of back.tensors.entries()) expect(await digest(t), t.name).toBe(await digest(src.tensors[i]!));
  });
  it('uses the torch layout: one directory, stored members, storages 64-aligned, version 3, little byteorder', async () => {
    const { bytes } = await roundTrip(await fixture('views.pt'), { archiveName: 'views' });
    const zip = await openZip(new BytesSource(bytes));
    expect(zip.entries.map((e) => e.name)).toEqual(['views/data.pkl', 'views/byteorder', ...[0, 1, 2, 3, 4, 5, 6].map((k) => `views/data/${k}`), 'views/version']);
    expect([...bytes.subarray(0, 4)]).toEqual([0x50, 0x4b, 0x03, 0x04]);
    for (const e of zip.entries) {
      expect(e.stored).toBe(true);
      if (e.name !== 'views/data.pkl') expect(e.dataOffset % 64, e.name).toBe(0);
    }
    expect(new TextDecoder().decode(await zip.readPrefix(zip.get('views/version')!, 8))).toBe('3\n');
    expect(new TextDecoder().decode(await zip.readPrefix(zip.get('views/byteorder')!, 8))).toBe('little');
  });
  it('emits only opcodes and globals torch 1.13 weights_only accepts (no BINFLOAT, no memo) for legacy dtypes', async () => {
    const { bytes } = await roundTrip(await fixture('transformers.pt'));
    const zip = await openZip(new BytesSource(bytes));
    const pkl = await zip.readPrefix(zip.get('archive/data.pkl')!, 1 << 20);
    const r = runPickle(pkl, 0, { mode: 'load', persistentLoad: new StorageTable('zip').load });
    for (const op of Object.keys(r.opcodes)) expect(WEIGHTS_ONLY_OPCODES.has(op) && op !== 'BINFLOAT', op).toBe(true);
    expect(r.globals.sort()).toEqual(['collections.OrderedDict', 'torch.BFloat16Storage', 'torch._utils._rebuild_tensor_v2']);
    expect((await scanCheckpoint(bytes)).safe).toBe(true);
  });
  it('re-ties aliases recorded in metadata to one storage', async () => {
    const src = await fixture('transformers.pt');
    // the input embedding is the name kept, as transformers keeps it (issue 11 item 4)
    expect(src.metadata!.get('lm_head.weight')).toBe('model.embed_tokens.weight');
    const { bytes, report } = await roundTrip(src);
    expect(report.aliases).toEqual({ 'lm_head.weight': 'model.embed_tokens.weight' });
    const back = await openTorchCheckpoint(bytes);
    expect(back.aliases).toEqual({ 'lm_head.weight': 'model.embed_tokens.weight' });
    const zip = await openZip(new BytesSource(bytes));
    expect(zip.entries.filter((e) => e.name.startsWith('archive/data/')).length).toBe(src.tensors.length);
    const all = await openTorchCheckpoint(bytes, { keepAliases: true });
    const a = all.tensors.find((t) => t.name === 'model.embed_tokens.weight')!;
    const b = all.tensors.find((t) => t.name === 'lm_head.weight')!;
    expect(await digest(a)).toBe(await digest(b));
  });
  it('writes the new dtypes with _rebuild_tensor_v3 and UntypedStorage', async () => {
    const { bytes } = await roundTrip(await fixture('dtypes.pt'));
    const zip = await openZip(new BytesSource(bytes));
    const { globals } = loadPickle(await zip.readPrefix(zip.get('archive/data.pkl')!, 1 << 20), { persistentLoad: new StorageTable('zip').load });
    expect(globals).toEqual(expect.arrayContaining(['torch._utils._rebuild_tensor_v3', 'torch.storage.UntypedStorage', 'torch.float8_e4m3fn', 'torch.uint64']));
  });
  it('refuses a dtype torch lacks and leaves no output', async () => {
    const t: TensorDescriptor = { name: 'x', dtype: 'F6_E2M3', shape: [4], byteLength: 3, chunks: async function* () { yield new Uint8Array(3); } };
    const sink = new MemorySink();
    const err = await writeTorchCheckpoint({ tensors: [t], metadata: null }, sink).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TensorportError);
    expect((err as TensorportError).code).toBe('TorchUnsupportedDtype');
    expect(() => sink.bytes()).toThrow();
  });
  it('refuses duplicate names and tensors whose bytes disagree with their byteLength, leaving no output', async () => {
    const t = (name: string, bytes: number): TensorDescriptor => ({ name, dtype: 'U8', shape: [2], byteLength: 2, chunks: async function* () { yield new Uint8Array(bytes); } });
    for (const [tensors, code] of [[[t('a', 2), t('a', 2)], 'DuplicateTensorName'], [[t('a', 1)], 'TensorByteLengthMismatch'], [[t('a', 3)], 'TensorByteLengthMismatch']] as const) {
      const sink = new MemorySink();
      await expect(writeTorchCheckpoint({ tensors, metadata: null }, sink)).rejects.toMatchObject({ code, tensor: 'a' });
      expect(() => sink.bytes()).toThrow();
    }
  });
  it('chunks SETITEMS by 1000 like CPython', async () => {
    const tensors: TensorDescriptor[] = Array.from({ length: 2500 }, (_, i) => ({ name: `t${i}`, dtype: 'U8', shape: [1], byteLength: 1, chunks: async function* () { yield Uint8Array.of(i & 0xff); } }));
    const { bytes } = await roundTrip({ tensors, metadata: null });
    const zip = await openZip(new BytesSource(bytes));
    const r = runPickle(await zip.readPrefix(zip.get('archive/data.pkl')!, 1 << 22), 0, { mode: 'load', persistentLoad: new StorageTable('zip').load });
    expect(r.opcodes.SETITEMS).toBe(3);
    const back = await openTorchCheckpoint(bytes);
    expect(back.tensors.length).toBe(2500);
    expect(await digest(back.tensors[2499]!)).toBe(await digest(tensors[2499]!));
  });
});
