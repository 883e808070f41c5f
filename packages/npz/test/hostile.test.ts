import { readdirSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BytesSource, isTensorportError, type DeflateCodec } from '@tensorport/core';
import { nodeZlibCodec } from '@tensorport/core/node';
import { fflateCodec, openNpy, openNpz } from '../src/index.ts';
import { fixture, fixturePath } from './helpers.ts';

/** Opens as npz and streams every tensor; resolves to null or the error. */
async function tryNpz(bytes: Uint8Array, codec: DeflateCodec = nodeZlibCodec): Promise<unknown> {
  try {
    const ck = await openNpz(new BytesSource(bytes), { codec });
    for (const t of ck.tensors) for await (const _ of t.chunks(4096)) void _;
    return null;
  } catch (e) {
    return e;
  }
}

async function tryNpy(bytes: Uint8Array): Promise<unknown> {
  try {
    const ck = await openNpy(new BytesSource(bytes));
    for (const t of ck.tensors) for await (const _ of t.chunks(64)) void _;
    return null;
  } catch (e) {
    return e;
  }
}

/** A v1.0 .npy with `header` as its dict text (padded as numpy pads) and `data`. */
function npy(header: string, data: Uint8Array = new Uint8Array(0), version = 1): Uint8Array {
  const lenSize = version === 1 ? 2 : 4;
  let text = header;
  while ((8 + lenSize + text.length + 1) % 64) text += ' ';
  text += '\n';
  const out = new Uint8Array(8 + lenSize + text.length + data.byteLength);
  out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, version, 0]);
  out[8] = text.length & 0xff;
  out[9] = text.length >> 8;
  for (let i = 0; i < text.length; i++) out[8 + lenSize + i] = text.charCodeAt(i);
  out.set(data, 8 + lenSize + text.length);
  return out;
}

const VALID_ZIPS = new Set(['ok_stored', 'cd_zip64_extra_sizes_only', 'zip64_minimal_valid', 'lfh_ffffffff_without_zip64_extra', 'datadesc_payload_has_signatures', 'path_traversal_names']);

describe('openNpz on the hostile ZIP corpus', () => {
  const files = readdirSync(fixturePath('hostile')).filter((f) => f.endsWith('.npz'));
  for (const [label, codec] of [['fflate', fflateCodec], ['node:zlib', nodeZlibCodec]] as const) {
    it(`every malformed archive is refused with a TensorportError (${label})`, async () => {
      expect(files.length).toBeGreaterThan(30);
      for (const f of files) {
        const err = await tryNpz(await fixture(`hostile/${f}`), codec);
        const name = f.replace(/\.npz$/, '');
        if (VALID_ZIPS.has(name)) expect(err, f).toBeNull();
        else expect(isTensorportError(err), `${f}: ${String(err)}`).toBe(true);
      }
    });
  }

  it('gives the same error code whichever codec inflates', async () => {
    for (const f of ['deflate_usize_lies', 'deflate_truncated_stream', 'deflate_crc_mismatch', 'bad_crc']) {
      const a = (await tryNpz(await fixture(`hostile/${f}.npz`), fflateCodec)) as { code?: string };
      const b = (await tryNpz(await fixture(`hostile/${f}.npz`), nodeZlibCodec)) as { code?: string };
      expect(a.code, f).toBe(b.code);
    }
  });

  it('refuses a deflated member that is not an .npy by its declared size alone (ratio-1000 bomb)', async () => {
    // 64 KiB inflating to 64 MiB of zeros: no .npy magic, so the header read (a few KiB) refuses it.
    const err = await tryNpz(await fixture('hostile/deflate_ratio_1000.npz'), fflateCodec);
    expect(err).toMatchObject({ code: 'NpyInvalidMagic', tensor: 'bomb' });
  });
});

describe('openNpy on hostile headers', () => {
  const f4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  const CASES: Array<[string, Uint8Array, string]> = [
    ['version 4.0', npy(f4, new Uint8Array(8), 4), 'NpyUnsupportedVersion'],
    ['version 1.1', (() => { const b = npy(f4, new Uint8Array(8)); b[7] = 1; return b; })(), 'NpyUnsupportedVersion'],
    ['header length past the end', (() => { const b = npy(f4); b[8] = 0xff; b[9] = 0x0f; return b; })(), 'NpyTruncated'],
    ['header length past the cap', (() => { const b = npy(f4); b[8] = 0xff; b[9] = 0xff; return b; })(), 'NpyHeaderTooLarge'],
    ['not a dict', npy("['descr', 'fortran_order', 'shape']"), 'NpyInvalidHeader'],
    ['missing key', npy("{'descr': '<f4', 'shape': (2,), }"), 'NpyInvalidHeader'],
    ['extra key', npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1, }"), 'NpyInvalidHeader'],
    ['shape as a list', npy("{'descr': '<f4', 'fortran_order': False, 'shape': [2], }"), 'NpyInvalidHeader'],
    ['negative dimension', npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }"), 'NpyInvalidHeader'],
    ['dimension past 2^53', npy("{'descr': '<f4', 'fortran_order': False, 'shape': (9007199254740993,), }"), 'NpyInvalidHeader'],
    ['byte length past 2^53', npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"), 'ValidationOverflow'],
    ['fortran_order 0', npy("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }"), 'NpyInvalidHeader'],
    ['descr not a typestr', npy("{'descr': 'float32', 'fortran_order': False, 'shape': (2,), }"), 'NpyUnsupportedDtype'],
    ['descr an int', npy("{'descr': 4, 'fortran_order': False, 'shape': (2,), }"), 'NpyInvalidHeader'],
    ['unknown kind', npy("{'descr': '<q8', 'fortran_order': False, 'shape': (2,), }"), 'NpyUnsupportedDtype'],
    ['int of odd size', npy("{'descr': '<i3', 'fortran_order': False, 'shape': (2,), }"), 'NpyUnsupportedDtype'],
    ['nesting bomb', npy(`{'descr': '<f4', 'fortran_order': False, 'shape': ${'('.repeat(200)}${')'.repeat(200)}, }`), 'NpyInvalidHeader'],
    ['data shorter than the shape', npy(f4, new Uint8Array(7)), 'NpyTruncated'],
    ['NUL in the header', npy("{'descr': '<f4',\0 'fortran_order': False, 'shape': (2,), }", new Uint8Array(8)), 'NpyInvalidHeader'],
  ];
  for (const [what, bytes, code] of CASES) {
    it(`${what} → ${code}`, async () => {
      const err = await tryNpy(bytes);
      expect(err).toMatchObject({ code });
    });
  }

  it('accepts the same header in an npz member with a huge declared shape only if the member is that big', async () => {
    // shape (2^40,) f4 in a 200-byte file: refused before anything is allocated
    const err = await tryNpy(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }"));
    expect(err).toMatchObject({ code: 'NpyTruncated' });
  });
});

describe('property: mutated real archives give data or a TensorportError, never anything else', () => {
  const sources = ['npz/savez.npz', 'npz/savez_compressed.npz', 'npz/savez_streamed.npz', 'npz/savez_compressed_streamed.npz'];
  for (const file of sources) {
    for (const [label, codec] of [['fflate', fflateCodec], ['node:zlib', nodeZlibCodec]] as const) {
      it(`${file} (${label})`, async () => {
        const base = await fixture(file);
        const boundary = fc.constantFrom(0, 1, 0x7f, 0x80, 0xff);
        const mutation = fc.oneof(
          fc.record({ kind: fc.constant('byte' as const), at: fc.nat(base.byteLength - 1), v: fc.oneof(boundary, fc.nat(255)) }),
          fc.record({ kind: fc.constant('word' as const), at: fc.nat(base.byteLength - 4), v: fc.constantFrom(0, 0xffffffff, 0x7fffffff, 0x80000000, base.byteLength) }),
          fc.record({ kind: fc.constant('cut' as const), at: fc.nat(base.byteLength), v: fc.constant(0) }),
        );
        await fc.assert(
          fc.asyncProperty(fc.array(mutation, { minLength: 1, maxLength: 4 }), async (ms) => {
            let b = base.slice();
            for (const m of ms) {
              if (m.kind === 'byte') b[m.at] = m.v;
              else if (m.kind === 'word') new DataView(b.buffer).setUint32(Math.min(m.at, b.byteLength - 4), m.v >>> 0, true);
              else b = b.slice(0, Math.max(m.at, 4));
            }
            const err = await tryNpz(b, codec);
            if (err !== null && !isTensorportError(err)) throw err;
          }),
          { numRuns: 400 },
        );
      });
    }
  }

  it('mutated .npy headers', async () => {
    const base = await fixture('npy/f8.npy');
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.nat(127), fc.nat(255)), { minLength: 1, maxLength: 6 }), async (ms) => {
        const b = base.slice();
        for (const [at, v] of ms) b[at] = v;
        const err = await tryNpy(b);
        if (err !== null && !isTensorportError(err)) throw err;
      }),
      { numRuns: 2000 },
    );
  });
});
