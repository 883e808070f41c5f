import { BytesSource, FolderContext, MemoryFolder } from '@tensorport/core';
import { describe, expect, it } from 'vitest';
import { openTorchCheckpoint, openTorchFile } from '../src/index.ts';
import { binunicode, global, pk, STOP } from './helpers/pickle-bytes.ts';
import { statePickle, torchZip } from './helpers/torch-zip-bytes.ts';

/**
 * openTorchFile runs data.pkl once (the scan's run, in the reader's configuration): what the
 * reader alone refuses, it must still refuse with the reader's own error, and a refusal must still
 * name the disallowed globals found after such a problem (the run carries on past it).
 */
const ctxOf = (bytes: Uint8Array): FolderContext => new FolderContext(new MemoryFolder([['m.pt', bytes]]), 'm.pt');
const archive = (pkl: Uint8Array): Promise<Uint8Array> => torchZip({ 't/data.pkl': pkl, 't/data/0': new Uint8Array(16), 't/version': '3\n' });

/** `{'w': _rebuild_tensor_v2(<pid>, 0, (4,), (1,), False, OrderedDict()), ...tail}` with a 6-item (legacy-style) persistent id. */
function sixItemPid(...tail: Array<number | string | number[]>): Uint8Array {
  return pk(0x80, 2, 0x7d, 0x28, binunicode('w'), global('torch._utils', '_rebuild_tensor_v2'), 0x28,
    0x28, binunicode('storage'), global('torch', 'FloatStorage'), binunicode('0'), binunicode('cpu'), 0x4b, 4, 0x4e, 0x74, 0x51,
    0x4b, 0, 0x4b, 4, 0x85, 0x4b, 1, 0x85, 0x89, global('collections', 'OrderedDict'), 0x29, 0x52, 0x74, 0x52, ...tail, 0x75, STOP);
}

async function refusal(p: Promise<unknown>): Promise<{ code: string; message: string }> {
  return p.then(() => { throw new Error('expected a refusal'); }, (e: { code: string; message: string }) => e);
}

describe('one run of data.pkl: the reader assembles the scan\'s values', () => {
  it('a plain archive opens to the same tensors as the reader alone', async () => {
    const bytes = await archive(statePickle([{ name: 'w', key: '0', numel: 4, shape: [4], stride: [1] }]));
    const c = await openTorchFile(ctxOf(bytes), undefined);
    const alone = await openTorchCheckpoint(new BytesSource(bytes, 'm.pt'));
    expect(c.tensors.map((t) => [t.name, t.dtype, t.shape])).toEqual(alone.tensors.map((t) => [t.name, t.dtype, t.shape]));
    expect(c.tensors.map((t) => t.name)).toEqual(['w']);
  });

  it('a 6-item persistent id in a ZIP: the reader\'s own PickleInvalid, word for word', async () => {
    const bytes = await archive(sixItemPid());
    const once = await refusal(openTorchFile(ctxOf(bytes), undefined));
    const alone = await refusal(openTorchCheckpoint(new BytesSource(bytes, 'm.pt')));
    expect(alone).toMatchObject({ code: 'PickleInvalid', message: expect.stringContaining('storage persistent id has 6 items, expected 5') });
    expect(once).toMatchObject({ code: alone.code, message: alone.message });
  });

  it('a disallowed global after that persistent id is still named', async () => {
    const bytes = await archive(sixItemPid(binunicode('x'), global('posix', 'system')));
    expect(await refusal(openTorchFile(ctxOf(bytes), undefined))).toMatchObject({ code: 'PickleDisallowedGlobal', message: expect.stringContaining('posix.system') });
  });

  it('a second, harmless pickle after STOP: the reader\'s "bytes after STOP", word for word', async () => {
    const first = statePickle([{ name: 'w', key: '0', numel: 4, shape: [4], stride: [1] }]);
    const bytes = await archive(pk(first, 0x4e, STOP));
    const once = await refusal(openTorchFile(ctxOf(bytes), undefined));
    const alone = await refusal(openTorchCheckpoint(new BytesSource(bytes, 'm.pt')));
    expect(alone).toMatchObject({ code: 'PickleInvalid', message: expect.stringContaining('2 bytes after STOP') });
    expect(once).toMatchObject({ code: alone.code, message: alone.message });
  });
});
