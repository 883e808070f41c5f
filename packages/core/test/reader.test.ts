import { describe, expect, it, afterAll } from 'vitest';
import { open, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BlobSource, BytesSource } from '../src/io/source.ts';
import { FileSource } from '../src/node/file-source.ts';
import { TensorportError } from '../src/errors.ts';
import { openSafetensors } from '../src/safetensors/reader.ts';
import { readHeader, validateSafetensors } from '../src/safetensors/header.ts';
import { entry, stBytes, validFile } from './helpers/safetensors-bytes.ts';
import { collect } from './helpers/mem-tensor.ts';

describe('openSafetensors', () => {
  const file = validFile([['w', 'F32', [2, 3], 24], ['b', 'U8', [5], 5], ['s', 'I64', [], 8], ['e', 'F16', [0, 4], 0]], { format: 'pt' });

  it('reads only the header when opening', async () => {
    const src = new BytesSource(file);
    const f = await openSafetensors(src);
    expect(src.bytesRead).toBe(f.header.dataStart);
    expect(f.format).toBe('safetensors');
    expect(f.metadata).toEqual(new Map([['format', 'pt']]));
  });

  it('lists tensors in data order with ranges, and streams their bytes', async () => {
    const src = new BytesSource(file);
    const f = await openSafetensors(src);
    expect(f.tensors.map((t) => [t.name, t.dtype, t.shape, t.byteLength])).toEqual([
      ['w', 'F32', [2, 3], 24], ['b', 'U8', [5], 5], ['s', 'I64', [], 8], ['e', 'F16', [0, 4], 0],
    ]);
    const ds = f.header.dataStart;
    expect(f.tensors.map((t) => t.range.offset)).toEqual([ds, ds + 24, ds + 29, ds + 37]);
    for (const t of f.tensors) {
      const expected = file.subarray(t.range.offset, t.range.offset + t.byteLength);
      expect(await collect(t, 7)).toEqual(expected);
      expect(await collect(t, 1)).toEqual(expected);
      expect(await f.read(t.name)).toEqual(expected);
    }
  });

  it('readRange reads within one tensor and refuses anything outside it', async () => {
    const f = await openSafetensors(new BytesSource(file));
    const w = f.tensor('w');
    expect(await f.readRange('w', 4, 12)).toEqual(file.subarray(w.range.offset + 4, w.range.offset + 12));
    expect(await f.readRange('w', 24, 24)).toEqual(new Uint8Array(0));
    for (const [a, b] of [[-1, 4], [0, 25], [5, 4], [0.5, 2], [0, Number.NaN]] as const) {
      await expect(f.readRange('w', a, b)).rejects.toMatchObject({ code: 'RangeOutOfBounds', tensor: 'w' });
    }
  });

  it('tensor(name) throws TensorNotFound', async () => {
    const f = await openSafetensors(new BytesSource(file));
    expect(() => f.tensor('nope')).toThrow(expect.objectContaining({ code: 'TensorNotFound', tensor: 'nope' }) as unknown as Error);
    await expect(f.read('nope')).rejects.toBeInstanceOf(TensorportError);
  });

  it('refuses invalid files at open, with the validator codes', async () => {
    await expect(openSafetensors(new BytesSource(stBytes(`{"a":${entry('F32', [2], 0, 4)}}`, 4)))).rejects.toMatchObject({ code: 'TensorInvalidInfo' });
  });

  it('a dim above 2^53 opens and validates; using its shape throws DimensionTooLarge', async () => {
    const bytes = stBytes(`{"z":${entry('F32', [0, '18446744073709551615'], 0, 0)}}`);
    expect((await validateSafetensors(new BytesSource(bytes))).valid).toBe(true);
    const f = await openSafetensors(new BytesSource(bytes));
    const z = f.tensor('z');
    expect(z.byteLength).toBe(0);
    expect(z.info.exactShape).toEqual([0n, 18446744073709551615n]);
    expect(() => z.shape).toThrow(expect.objectContaining({ code: 'DimensionTooLarge', tensor: 'z' }) as unknown as Error);
  });

  it('works over a Blob', async () => {
    const src = new BlobSource(new Blob([file]), 'model.safetensors');
    const f = await openSafetensors(src);
    expect(await f.read('b')).toEqual(file.subarray(f.tensor('b').range.offset, f.tensor('b').range.offset + 5));
    await f.close();
  });
});

describe('a 100 GB sparse file', () => {
  let dir = '';
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('readHeader, validateSafetensors and openSafetensors read only the header bytes', async () => {
    dir = await mkdtemp(join(tmpdir(), 'tensorport-sparse-'));
    const path = join(dir, 'big.safetensors');
    const GB = 1_000_000_000;
    const tensorBytes = 25 * GB;
    const parts = Array.from({ length: 4 }, (_, i) => `"layer.${i}":${entry('F32', [tensorBytes / 4], i * tensorBytes, (i + 1) * tensorBytes)}`);
    const header = new TextEncoder().encode(`{${parts.join(',')}}`);
    const prefix = stBytes(header);
    const size = prefix.length + 4 * tensorBytes;
    const fh = await open(path, 'w');
    try {
      await fh.write(prefix, 0, prefix.length, 0);
      await fh.truncate(size); // sparse: no data blocks are written
    } finally {
      await fh.close();
    }
    const src = await FileSource.open(path);
    try {
      expect(src.size).toBe(size);
      const h = await readHeader(src);
      expect(h.tensors.at(-1)!.end).toBe(100 * GB);
      expect(src.bytesRead).toBe(8 + header.length);
      const r = await validateSafetensors(src);
      expect(r.valid).toBe(true);
      expect(src.bytesRead).toBe(2 * (8 + header.length));
      const f = await openSafetensors(src);
      expect(f.tensors[3]!.range.offset).toBe(8 + header.length + 75 * GB);
      expect(src.bytesRead).toBe(3 * (8 + header.length));
      // a small range at the far end of the file reads just those bytes (zeros of the hole)
      expect(await f.readRange('layer.3', tensorBytes - 4, tensorBytes)).toEqual(new Uint8Array(4));
      expect(src.bytesRead).toBe(3 * (8 + header.length) + 4);
    } finally {
      await src.close();
    }
  });
});
