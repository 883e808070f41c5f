import { describe, expect, it } from 'vitest';
import { BytesSource, MemorySink, openZip, type DeflateCodec } from '@tensorport/core';
import { nodeZlibCodec } from '@tensorport/core/node';
import { fflateCodec, openNpz, writeNpz } from '../src/index.ts';
import { PatchableMemorySink, bytesOf, fixture, fixturePath, fixtureSource, memTensor } from './helpers.ts';

const CODECS: Array<[string, DeflateCodec]> = [['fflate', fflateCodec], ['node:zlib', nodeZlibCodec]];

describe('openNpz on numpy archives', () => {
  for (const [label, codec] of CODECS) {
    it(`savez and savez_compressed give the same tensors (${label})`, async () => {
      const a = await openNpz(await fixtureSource('npz/savez.npz'), { codec });
      const b = await openNpz(await fixtureSource('npz/savez_compressed.npz'), { codec });
      expect(a.format).toBe('npz');
      expect(a.tensors.map((t) => [t.name, t.dtype, t.shape])).toEqual(b.tensors.map((t) => [t.name, t.dtype, t.shape]));
      for (const [i, t] of a.tensors.entries()) {
        const u = b.tensors[i]!;
        expect(await bytesOf(u), t.name).toEqual(await bytesOf(t));
        expect(u.range).toBeUndefined();
        // only node:zlib inflates on a thread pool, so only then may a writer start the next member early;
        // a Fortran-order member is transposed on the JS thread
        expect(u.offThread === true, t.name).toBe(label === 'node:zlib' && t.name !== 'fortran');
        expect(t.offThread).toBeUndefined();
      }
    });
  }

  it('names tensors from member names: .npy stripped, / and non-ASCII kept, arr_N for positional', async () => {
    const a = await openNpz(await fixtureSource('npz/savez.npz'));
    const names = a.tensors.map((t) => t.name);
    expect(names).toContain('params/Dense_0/kernel');
    expect(names).toContain('größe');
    const p = await openNpz(await fixtureSource('npz/savez_positional.npz'));
    expect(p.tensors.map((t) => t.name)).toEqual(['arr_0', 'arr_1']);
  });

  it('exposes stored C-order little-endian members as ranges of the archive', async () => {
    const bytes = await fixture('npz/savez.npz');
    const a = await openNpz(new BytesSource(bytes));
    const f4 = a.tensors.find((t) => t.name === 'f4')!;
    const r = f4.range!;
    expect(bytes.subarray(r.offset, r.offset + f4.byteLength)).toEqual(await bytesOf(f4));
    // big-endian and Fortran members are converted, so they have no range
    expect(a.tensors.find((t) => t.name === 'be_f4')!.range).toBeUndefined();
    expect(a.tensors.find((t) => t.name === 'fortran')!.range).toBeUndefined();
    const fortran = await bytesOf(a.tensors.find((t) => t.name === 'fortran')!);
    expect(Array.from(new Float64Array(fortran.buffer))).toEqual(Array.from({ length: 6 }, (_, i) => i * 0.37 - 1.5));
  });

  it('reads data-descriptor archives (np.savez into a pipe), stored and deflated', async () => {
    for (const f of ['npz/savez_streamed.npz', 'npz/savez_compressed_streamed.npz']) {
      const ck = await openNpz(await fixtureSource(f));
      expect(ck.tensors.map((t) => `${t.name}:${t.dtype}:${t.shape}`)).toEqual(['weights:F32:2,3', 'bias:I64:3']);
      expect(Array.from(new Float32Array((await bytesOf(ck.tensors[0]!)).buffer))).toEqual([0, 1, 2, 3, 4, 5].map((i) => Math.fround(i * 0.37 - 1.5)));
    }
  });

  it('reads an empty archive, bf16 archives (ml_dtypes, JAX), and skips non-npy members with a warning', async () => {
    expect((await openNpz(await fixtureSource('npz/savez_empty.npz'))).tensors).toEqual([]);
    const bf = await openNpz(await fixtureSource('npz/savez_bf16.npz'));
    expect(bf.tensors.map((t) => t.dtype)).toEqual(['BF16', 'F32']);
    const jax = await openNpz(await fixtureSource('reference/jax_bf16.npz'));
    expect(jax.tensors[0]!.dtype).toBe('BF16');
    expect(Array.from(await bytesOf(jax.tensors[0]!))).toEqual([0x80, 0x3f, 0x00, 0x40, 0x40, 0x40]);
    const extra = await openNpz(await fixtureSource('reference/npz_with_extra_member.npz'));
    expect(extra.tensors.map((t) => t.name)).toEqual(['a', 'nested/dir/b']);
    expect(extra.warnings.map((w) => w.code)).toEqual(['NpzSkippedMember']);
  });

  it('refuses object arrays inside an npz', async () => {
    await expect(openNpz(await fixtureSource('reference/savez_object.npz'))).rejects.toMatchObject({ code: 'NpyUnsupportedDtype', tensor: 'obj' });
  });

  it('refuses two members that give one tensor name (a and a.npy)', async () => {
    const sink = new PatchableMemorySink();
    const { ZipWriter } = await import('@tensorport/core');
    const z = new ZipWriter(sink);
    const npy = await fixture('npy/f4.npy');
    await z.add('a.npy', [npy] as unknown as AsyncIterable<Uint8Array>);
    await z.add('a', [npy] as unknown as AsyncIterable<Uint8Array>);
    await z.finish();
    await sink.commit();
    await expect(openNpz(new BytesSource(sink.bytes()))).rejects.toMatchObject({ code: 'DuplicateTensorName', tensor: 'a' });
  });

  it('verifies member CRCs while streaming a tensor', async () => {
    const bytes = (await fixture('npz/savez_positional.npz')).slice();
    const ck = await openNpz(new BytesSource(bytes));
    const t = ck.tensors[0]!;
    bytes[t.range!.offset + 3]! ^= 0xff;
    await expect(bytesOf(t)).rejects.toMatchObject({ code: 'ZipCrcMismatch' });
    const unchecked = await openNpz(new BytesSource(bytes), { verifyCrc: false });
    expect((await bytesOf(unchecked.tensors[0]!))[3]).toBe(bytes[t.range!.offset + 3]);
  });
});

describe('writeNpz', () => {
  it('reproduces np.savez byte for byte (patched local headers)', async () => {
    const bytes = await fixture('npz/savez_positional.npz');
    const ck = await openNpz(new BytesSource(bytes));
    const sink = new PatchableMemorySink();
    await writeNpz(ck.tensors, sink);
    expect(sink.bytes()).toEqual(bytes);
  });

  it('reproduces np.savez into a pipe byte for byte (data descriptors)', async () => {
    const bytes = await fixture('npz/savez_streamed.npz');
    const ck = await openNpz(new BytesSource(bytes));
    const sink = new MemorySink();
    await writeNpz(ck.tensors, sink);
    expect(sink.bytes()).toEqual(bytes);
  });

  it('reproduces np.savez of every dtype, / and non-ASCII names (C-order little-endian members)', async () => {
    const src = await openNpz(await fixtureSource('npz/savez.npz'));
    const sink = new PatchableMemorySink();
    await writeNpz(src.tensors, sink);
    const back = await openZip(new BytesSource(sink.bytes()));
    const orig = await openZip(await fixtureSource('npz/savez.npz'));
    expect(back.entries.map((e) => e.name)).toEqual(orig.entries.map((e) => e.name));
    for (const e of orig.entries) {
      const mine = back.get(e.name)!;
      const converted = e.name === 'be_f4.npy' || e.name === 'fortran.npy';
      if (!converted) expect([mine.crc32, mine.uncompressedSize, mine.flags], e.name).toEqual([e.crc32, e.uncompressedSize, e.flags]);
    }
  });

  for (const [label, codec] of CODECS) {
    it(`compress: true writes deflated members that read back identical (${label})`, async () => {
      const src = await openNpz(await fixtureSource('npz/savez.npz'));
      const sink = new MemorySink();
      await writeNpz(src.tensors, sink, { compress: true, codec });
      const back = await openNpz(new BytesSource(sink.bytes()), { codec });
      expect(back.archive.entries.every((e) => !e.stored)).toBe(true);
      expect(back.tensors.map((t) => t.name)).toEqual(src.tensors.map((t) => t.name));
      for (const [i, t] of src.tensors.entries()) expect(await bytesOf(back.tensors[i]!), t.name).toEqual(await bytesOf(t));
    });
  }

  it('writes an empty archive exactly as np.savez() does', async () => {
    const sink = new MemorySink();
    await writeNpz([], sink);
    expect(sink.bytes()).toEqual(await fixture('npz/savez_empty.npz'));
  });

  it('writes BF16 as <V2 and reads it back as BF16', async () => {
    const sink = new MemorySink();
    await writeNpz([memTensor('w', 'BF16', [2], new Uint8Array([0x80, 0x3f, 0, 0x40]))], sink);
    const back = await openNpz(new BytesSource(sink.bytes()));
    expect(back.tensors[0]!.dtype).toBe('BF16');
    const z = await openZip(new BytesSource(sink.bytes()));
    const head = new TextDecoder().decode(await z.readPrefix(z.entries[0]!, 40));
    expect(head).toContain("'descr': '<V2'");
  });

  it('aborts (no partial output) on a duplicate name or a short tensor', async () => {
    for (const tensors of [
      [memTensor('a', 'U8', [1], new Uint8Array(1)), memTensor('a', 'U8', [1], new Uint8Array(1))],
      [{ ...memTensor('a', 'U8', [3], new Uint8Array(2)), byteLength: 3 }],
    ]) {
      const sink = new MemorySink();
      let committed = false;
      let aborted = false;
      sink.commit = async () => void (committed = true);
      sink.abort = async () => void (aborted = true);
      await expect(writeNpz(tensors, sink)).rejects.toMatchObject({ code: expect.stringMatching(/DuplicateTensorName|TensorByteLengthMismatch/) });
      expect([committed, aborted]).toEqual([false, true]);
    }
  });
});

describe('stored members read from a file', () => {
  it('array data arrives in whole read buffers (the .npy header is read apart), bytes unchanged', async () => {
    const { FileSource } = await import('@tensorport/core/node');
    const file = await openNpz(await FileSource.open(fixturePath('npz/savez.npz')));
    const mem = await openNpz(await fixtureSource('npz/savez.npz'));
    let checked = 0;
    try {
      for (const [i, t] of file.tensors.entries()) {
        expect(await bytesOf(t, 20)).toEqual(await bytesOf(mem.tensors[i]!, 20));
        if (!t.range || t.byteLength < 24) continue; // swapped or transposed data is a new buffer anyway
        for await (const c of t.chunks(20)) expect([c.byteOffset, c.byteLength]).toEqual([0, c.buffer.byteLength]);
        checked++;
      }
    } finally {
      await file.close();
      await mem.close();
    }
    expect(checked).toBeGreaterThan(3);
  });
});
