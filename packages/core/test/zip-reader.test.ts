import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BytesSource, isTensorportError, openZip, type ByteSource, type DeflateCodec, type ZipArchive } from '../src/index.ts';
import { nodeZlibCodec } from '../src/node/zlib.ts';

const FIX = new URL('../../../fixtures/npz/', import.meta.url);
const load = (rel: string) => new Uint8Array(readFileSync(new URL(rel, FIX)));
const open = (bytes: Uint8Array, codec: DeflateCodec = nodeZlibCodec) => openZip(new BytesSource(bytes), { codec });

async function collect(z: ZipArchive, name: string): Promise<Uint8Array> {
  const e = z.get(name);
  if (!e) throw new Error(`no member ${name}`);
  const parts: Uint8Array[] = [];
  for await (const c of z.stream(e)) parts.push(c.slice());
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.byteLength;
  }
  return out;
}

async function openError(bytes: Uint8Array): Promise<unknown> {
  try {
    const z = await open(bytes);
    for (const e of z.entries) for await (const _ of z.stream(e)) void _;
  } catch (e) {
    return e;
  }
  return null;
}

describe('ZIP reader on numpy archives', () => {
  it('reads savez (stored) and savez_compressed (deflated) to the same member bytes', async () => {
    const stored = await open(load('npz/savez.npz'));
    const deflated = await open(load('npz/savez_compressed.npz'));
    expect(stored.entries.map((e) => e.name)).toEqual(deflated.entries.map((e) => e.name));
    expect(stored.entries.length).toBeGreaterThan(10);
    expect(stored.entries.every((e) => e.stored)).toBe(true);
    expect(deflated.entries.every((e) => !e.stored)).toBe(true);
    for (const e of stored.entries) {
      const a = await collect(stored, e.name);
      expect(a.byteLength).toBe(e.uncompressedSize);
      expect(Buffer.from(a.subarray(0, 6)).toString('latin1')).toBe('\x93NUMPY');
      expect(await collect(deflated, e.name)).toEqual(a);
      // The stored member as a window of the file: the same bytes, no copy through the inflater.
      const win = stored.storedSource(e);
      expect(await win.read(0, win.size)).toEqual(a);
    }
  });

  it('keeps / and non-ASCII member names (UTF-8 flag) as written by numpy', async () => {
    const z = await open(load('npz/savez.npz'));
    expect(z.get('params/Dense_0/kernel.npy')).toBeDefined();
    const g = z.get('größe.npy');
    expect(g).toBeDefined();
    expect(g!.flags & 0x800).toBe(0x800);
  });

  it('reads np.savez into a pipe: data descriptors after stored and deflated members', async () => {
    for (const f of ['npz/savez_streamed.npz', 'npz/savez_compressed_streamed.npz']) {
      const z = await open(load(f));
      expect(z.entries.map((e) => e.name)).toEqual(['weights.npy', 'bias.npy']);
      for (const e of z.entries) {
        expect(e.flags & 8).toBe(8);
        expect((await collect(z, e.name)).byteLength).toBe(e.uncompressedSize);
      }
    }
    const a = await open(load('npz/savez_streamed.npz'));
    const b = await open(load('npz/savez_compressed_streamed.npz'));
    expect(await collect(a, 'bias.npy')).toEqual(await collect(b, 'bias.npy'));
  });

  it('reads an empty archive (22 bytes, end record only)', async () => {
    const bytes = load('npz/savez_empty.npz');
    expect(bytes.byteLength).toBe(22);
    expect((await open(bytes)).entries).toEqual([]);
  });

  it('honours a CD ZIP64 extra without a ZIP64 end record (numpy savez_compressed of 4 GiB of zeros)', async () => {
    const bytes = load('big/big_compressed_zeros.npz');
    const z = await open(bytes);
    expect(z.end.zip64).toBe(false);
    const [e, tail] = z.entries;
    expect(e!.name).toBe('zeros.npy');
    expect(e!.uncompressedSize).toBeGreaterThan(2 ** 32);
    expect(e!.dataOffset + e!.compressedSize).toBe(tail!.localHeaderOffset);
    const head = await z.readPrefix(e!, 10);
    expect(Buffer.from(head.subarray(0, 6)).toString('latin1')).toBe('\x93NUMPY');
  });

  it('inflates and CRC-checks the whole >4 GiB member', async () => {
    const z = await open(load('big/big_compressed_zeros.npz'));
    const e = z.entries[0]!;
    let n = 0;
    for await (const c of z.stream(e)) n += c.byteLength;
    expect(n).toBe(e.uncompressedSize);
    // 4 GiB of inflation: seconds here, much longer on a loaded CI machine (no timing assert)
  }, 600_000);

  it('reads the crafted edge cases that are valid', async () => {
    for (const f of ['ok_stored', 'cd_zip64_extra_sizes_only', 'zip64_minimal_valid', 'lfh_ffffffff_without_zip64_extra']) {
      const z = await open(load(`hostile/${f}.npz`));
      expect((await collect(z, 'a.npy')).byteLength, f).toBe(144);
    }
    const sig = await open(load('hostile/datadesc_payload_has_signatures.npz'));
    expect((await collect(sig, 'sig.npy')).byteLength).toBe(174);
  });

  it('returns path-like names verbatim (they are keys, never paths)', async () => {
    const z = await open(load('hostile/path_traversal_names.npz'));
    expect(z.entries.map((e) => e.name)).toEqual(['../evil.npy', '/abs/path.npy', '..\\win\\evil.npy', 'C:/drive.npy', 'nul\0byte.npy']);
  });
});

/** Hostile archives and the error each one must give (opening and streaming every member). */
const HOSTILE: Record<string, string> = {
  bad_crc: 'ZipCrcMismatch',
  cd_count_too_high: 'ZipInvalidCentralDirectory',
  cd_extra_overrun: 'ZipInvalidCentralDirectory',
  cd_ffffffff_without_zip64_extra: 'ZipInvalidZip64',
  cd_offset_wrong: 'ZipInvalidCentralDirectory',
  cd_size_past_eocd: 'ZipTruncated',
  datadesc_wrong: 'ZipDataDescriptorMismatch',
  deflate64_method: 'ZipUnsupportedMethod',
  deflate_crc_mismatch: 'ZipCrcMismatch',
  // Stored bytes read as DEFLATE happen to decode (fixed Huffman) to 6 bytes, then stop.
  deflate_garbage: 'ZipSizeMismatch',
  deflate_truncated_stream: 'ZipInflateFailed',
  deflate_usize_lies: 'ZipBomb',
  duplicate_names: 'ZipDuplicateName',
  encrypted_flag: 'ZipEncrypted',
  fake_eocd_in_comment: 'ZipTruncated',
  lfh_cd_mismatch: 'ZipLocalHeaderMismatch',
  lfh_cd_name_mismatch: 'ZipLocalHeaderMismatch',
  lfh_crc_mismatch: 'ZipLocalHeaderMismatch',
  lfh_method_mismatch: 'ZipLocalHeaderMismatch',
  lho_past_cd: 'ZipMemberOutOfBounds',
  multi_disk: 'ZipMultiDisk',
  overlapping_entries: 'ZipOverlap',
  prepended_junk: 'ZipInvalidCentralDirectory',
  // b.npy's entry points at a.npy's local header: caught by the name check before the overlap check.
  same_local_header: 'ZipLocalHeaderMismatch',
  stored_size_mismatch: 'ZipSizeMismatch',
  unknown_method_bzip2: 'ZipUnsupportedMethod',
  utf8_flag_invalid_name: 'ZipInvalidName',
  zip64_locator_bad_offset: 'ZipInvalidZip64',
  zip64eocd_cd_ffffffff_without_extra: 'ZipInvalidZip64',
};

describe('ZIP reader on hostile archives', () => {
  for (const [file, code] of Object.entries(HOSTILE)) {
    it(`${file} → ${code}`, async () => {
      const err = await openError(load(`hostile/${file}.npz`));
      expect(isTensorportError(err), String(err)).toBe(true);
      expect((err as { code: string }).code).toBe(code);
    });
  }

  it('stops inflating a lying member at its declared size (the codec is not drained)', async () => {
    let produced = 0;
    const counting: DeflateCodec = {
      ...nodeZlibCodec,
      name: 'counting',
      async *inflateRaw(input) {
        for await (const c of nodeZlibCodec.inflateRaw(input)) {
          produced += c.byteLength;
          yield c;
        }
      },
    };
    const z = await open(load('hostile/deflate_usize_lies.npz'), counting);
    const e = z.entries[0]!;
    let delivered = 0;
    await expect(
      (async () => {
        for await (const c of z.stream(e)) delivered += c.byteLength;
      })(),
    ).rejects.toMatchObject({ code: 'ZipBomb', tensor: 'lie.npy' });
    expect(delivered).toBeLessThanOrEqual(1024);
    // The stream would inflate to 64 MiB; one zlib chunk past the limit is all that is produced.
    expect(produced).toBeLessThan(1024 * 1024);
  });

  it('every truncation of a real archive is refused with ZipTruncated or ZipEndRecordNotFound', async () => {
    const bytes = load('npz/savez_streamed.npz');
    for (let n = 0; n < bytes.byteLength; n++) {
      const err = await openError(bytes.subarray(0, n));
      expect((err as { code?: string }).code, `prefix ${n}`).toBe(n >= 4 ? 'ZipTruncated' : 'ZipEndRecordNotFound');
    }
  });

  it('caps the entry count and directory size', async () => {
    const bytes = load('npz/savez.npz');
    const src = new BytesSource(bytes);
    await expect(openZip(src, { maxEntries: 3 })).rejects.toMatchObject({ code: 'ZipLimitExceeded' });
    await expect(openZip(src, { maxCentralDirectoryBytes: 100 })).rejects.toMatchObject({ code: 'ZipLimitExceeded' });
  });

  it('refuses to inflate without a codec, by name', async () => {
    const z = await openZip(new BytesSource(load('npz/savez_compressed.npz')));
    expect(() => z.stream(z.entries[0]!)).toThrow(expect.objectContaining({ code: 'ZipUnsupportedMethod' }));
  });

  it('reads only the tail and the headers to open (random access)', async () => {
    const bytes = load('big/big_compressed_zeros.npz');
    const src: ByteSource = new BytesSource(bytes);
    await openZip(src, { codec: nodeZlibCodec });
    expect(src.bytesRead).toBeLessThan(70_000);
  });
});

describe('ZIP reader without CRC verification', () => {
  it('still stops a member at its declared size', async () => {
    const z = await open(load('hostile/deflate_usize_lies.npz'));
    await expect(
      (async () => {
        for await (const _ of z.stream(z.entries[0]!, { verify: false })) void _;
      })(),
    ).rejects.toMatchObject({ code: 'ZipBomb' });
    const bad = await open(load('hostile/bad_crc.npz'));
    let n = 0;
    for await (const c of bad.stream(bad.entries[0]!, { verify: false })) n += c.byteLength;
    expect(n).toBe(144);
  });
});

describe('ZIP reader: a stored member split at a header (splitAt)', () => {
  it('yields the first splitAt bytes alone, then chunks that start there; same bytes, CRC still checked', async () => {
    const z = await open(load('npz/savez.npz'));
    const e = [...z.entries].sort((a, b) => b.uncompressedSize - a.uncompressedSize)[0]!;
    expect(e.uncompressedSize).toBeGreaterThan(130);
    const whole = await collect(z, e.name);
    for (const splitAt of [1, 128, e.uncompressedSize - 1, e.uncompressedSize, e.uncompressedSize + 5]) {
      const chunks: Uint8Array[] = [];
      for await (const c of z.stream(e, { splitAt, chunkSize: 64 })) chunks.push(c.slice());
      expect(chunks[0]!.byteLength).toBe(Math.min(splitAt, e.uncompressedSize));
      expect(chunks.slice(1).every((c, i, rest) => c.byteLength === 64 || i === rest.length - 1)).toBe(true);
      expect(Buffer.concat(chunks)).toEqual(Buffer.from(whole));
    }
    const bad = await open(load('hostile/bad_crc.npz'));
    await expect(
      (async () => {
        for await (const _ of bad.stream(bad.entries[0]!, { splitAt: 128 })) void _;
      })(),
    ).rejects.toMatchObject({ code: 'ZipCrcMismatch' });
  });
});
