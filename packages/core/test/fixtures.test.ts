/**
 * Every fixture written by the real Python tools (fixtures/safetensors, see fixtures/README.md)
 * reads back with the names, dtypes, shapes, offsets, metadata and bytes its manifest records.
 * The manifests' SHA-256s were computed by Python from the tensors before they were written.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { FileSource, openCheckpointPath } from '../src/node/index.ts';
import { BytesSource, openSafetensors, openShardedCheckpoint, readHeader, validateSafetensors, type TensorDescriptor } from '../src/index.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../../../fixtures/safetensors');

interface ManifestTensor {
  name: string;
  dtype: string;
  shape: number[];
  dataOffsets: [number, number];
  byteLength: number;
  sha256: string;
}
interface Manifest {
  file: string;
  writer: string;
  fileSize: number;
  fileSha256: string;
  headerLength: number;
  metadata?: Record<string, string> | null;
  tensors?: ManifestTensor[];
  description?: string;
  reference: { accepted: boolean; error?: string };
}

const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

/** Hashes a tensor through its `chunks()` stream, in small chunks so chunk joins are exercised. */
async function streamedSha(t: TensorDescriptor): Promise<{ sha: string; length: number }> {
  const h = createHash('sha256');
  let length = 0;
  for await (const c of t.chunks(7)) {
    h.update(c);
    length += c.byteLength;
  }
  return { sha: h.digest('hex'), length };
}

const summary = (list: ReadonlyArray<{ name: string; dtype: string; shape: readonly number[] }>): string[][] =>
  list.map((t) => [t.name, t.dtype, JSON.stringify(t.shape)]).sort((a, b) => (a[0]! < b[0]! ? -1 : a[0]! > b[0]! ? 1 : 0));

async function manifestsIn(dir: string): Promise<Manifest[]> {
  const names = (await readdir(join(ROOT, dir))).filter((n) => n.endsWith('.manifest.json')).sort();
  return Promise.all(names.map(async (n) => JSON.parse(await readFile(join(ROOT, dir, n), 'utf8')) as Manifest));
}

const top = await manifestsIn('.');
const shards = await manifestsIn('sharded');
const negatives = await manifestsIn('negative');
const positives = [...top, ...shards];

async function bytesOf(m: Manifest): Promise<Uint8Array> {
  const bytes = new Uint8Array(await readFile(join(ROOT, m.file)));
  // The fixture is the file the manifest describes (not edited or re-generated halfway).
  expect(bytes.byteLength).toBe(m.fileSize);
  expect(sha256(bytes)).toBe(m.fileSha256);
  return bytes;
}

/** Zero-size tensors may share an offset: order ties by name so both sides list them alike. */
const byRange = <T extends { name: string }>(list: T[], range: (t: T) => [number, number]): T[] =>
  [...list].sort((a, b) => range(a)[0] - range(b)[0] || range(a)[1] - range(b)[1] || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

describe('fixtures written by safetensors / torch / numpy', () => {
  it('covers every dtype the package writes, the transformer shard and the sharded checkpoint', () => {
    const dtypes = new Set(positives.flatMap((m) => m.tensors!.map((t) => t.dtype)));
    for (const d of ['BOOL', 'U8', 'I8', 'I16', 'U16', 'F16', 'BF16', 'I32', 'U32', 'F32', 'C64', 'F64', 'I64', 'U64',
      'F8_E4M3', 'F8_E5M2', 'F8_E8M0', 'F8_E4M3FNUZ', 'F8_E5M2FNUZ', 'F4']) {
      expect(dtypes, d).toContain(d);
    }
    expect(top.map((m) => m.file)).toContain('transformer_shard.safetensors');
    expect(shards.length).toBeGreaterThanOrEqual(2);
  });

  it.each(positives.map((m) => [m.file, m] as const))('%s reads back as its manifest says', async (_file, m) => {
    const bytes = await bytesOf(m);
    const source = new BytesSource(bytes, m.file);
    const result = await validateSafetensors(source);
    expect(result.errors).toEqual([]);
    expect(result.valid).toBe(true);

    const header = await readHeader(source);
    expect(header.headerLength).toBe(m.headerLength);
    expect(header.dataStart).toBe(8 + m.headerLength);
    expect(header.metadata === null ? null : [...header.metadata.entries()].sort()).toEqual(
      m.metadata === null || m.metadata === undefined ? null : Object.entries(m.metadata).sort(),
    );

    const ours = byRange(header.tensors, (t) => [t.begin, t.end]);
    const theirs = byRange(m.tensors!, (t) => t.dataOffsets);
    expect(ours.map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape, offsets: [t.begin, t.end] }))).toEqual(
      theirs.map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape, offsets: t.dataOffsets })),
    );
    for (const [i, t] of ours.entries()) {
      const data = bytes.subarray(header.dataStart + t.begin, header.dataStart + t.end);
      expect(data.byteLength).toBe(theirs[i]!.byteLength);
      expect(sha256(data), t.name).toBe(theirs[i]!.sha256);
    }
  });

  it.each(positives.map((m) => [m.file, m] as const))('%s opens as a Checkpoint; read() and chunks() give the bytes', async (_file, m) => {
    const checkpoint = await openSafetensors(new BytesSource(await bytesOf(m), m.file));
    try {
      expect(checkpoint.format).toBe('safetensors');
      expect(summary(checkpoint.tensors)).toEqual(summary(m.tensors!));
      const expected = new Map(m.tensors!.map((t) => [t.name, t]));
      for (const t of checkpoint.tensors) {
        const want = expected.get(t.name)!;
        expect(t.byteLength).toBe(want.byteLength);
        expect(sha256(await checkpoint.read(t.name)), t.name).toBe(want.sha256);
        expect(await streamedSha(t)).toEqual({ sha: want.sha256, length: want.byteLength });
      }
      await expect(checkpoint.read('no such tensor')).rejects.toMatchObject({ code: 'TensorNotFound' });
    } finally {
      await checkpoint.close();
    }
  });

  it('the sharded fixture opens through its index with every tensor and byte', async () => {
    const indexBytes = new Uint8Array(await readFile(join(ROOT, 'sharded/model.safetensors.index.json')));
    const byFile = new Map(shards.map((m) => [m.file.replace(/^sharded\//, ''), m]));
    const checkpoint = await openShardedCheckpoint(indexBytes, async (name) => new BytesSource(await bytesOf(byFile.get(name)!), name));
    try {
      expect(checkpoint.warnings).toEqual([]);
      expect(checkpoint.shards.map((s) => s.file)).toEqual([...byFile.keys()].sort());
      expect(checkpoint.metadata).toEqual(new Map([['format', 'pt']]));
      const all = shards.flatMap((m) => m.tensors!);
      expect(summary(checkpoint.tensors)).toEqual(summary(all));
      const want = new Map(all.map((t) => [t.name, t.sha256]));
      for (const t of checkpoint.tensors) expect((await streamedSha(t)).sha, t.name).toBe(want.get(t.name));
    } finally {
      await checkpoint.close();
    }
  });

  it('every fixture and the sharded directory read the same from disk (FileSource, openCheckpointPath)', async () => {
    for (const m of top) {
      const checkpoint = await openSafetensors(await FileSource.open(join(ROOT, m.file)));
      try {
        const want = new Map(m.tensors!.map((t) => [t.name, t.sha256]));
        expect(summary(checkpoint.tensors)).toEqual(summary(m.tensors!));
        for (const t of checkpoint.tensors) expect((await streamedSha(t)).sha, `${m.file}: ${t.name}`).toBe(want.get(t.name));
      } finally {
        await checkpoint.close();
      }
    }
    const sharded = await openCheckpointPath(join(ROOT, 'sharded'));
    try {
      expect(sharded.format).toBe('safetensors-sharded');
      const all = shards.flatMap((m) => m.tensors!);
      const want = new Map(all.map((t) => [t.name, t.sha256]));
      expect(summary(sharded.tensors)).toEqual(summary(all));
      for (const t of sharded.tensors) expect((await streamedSha(t)).sha, t.name).toBe(want.get(t.name));
    } finally {
      await sharded.close();
    }
  });

  it('the sharded index maps every tensor to the shard that holds it; total_size adds up', async () => {
    const index = JSON.parse(await readFile(join(ROOT, 'sharded/model.safetensors.index.json'), 'utf8')) as {
      metadata: { total_size: number };
      weight_map: Record<string, string>;
    };
    const expected: Record<string, string> = {};
    let total = 0;
    for (const m of shards) {
      for (const t of m.tensors!) {
        expected[t.name] = m.file.replace(/^sharded\//, '');
        total += t.byteLength;
      }
    }
    expect(index.weight_map).toEqual(expected);
    expect(index.metadata.total_size).toBe(total);
  });
});

describe("the documentation's negative example", () => {
  it('exists and the reference rejected it when it was generated', () => {
    expect(negatives.map((m) => m.file)).toContain('negative/doc_offsets_3_8195_truncated.safetensors');
    for (const m of negatives) expect(m.reference.accepted).toBe(false);
  });

  it.each(negatives.map((m) => [m.file, m] as const))('%s is rejected', async (_file, m) => {
    const bytes = await bytesOf(m);
    const result = await validateSafetensors(new BytesSource(bytes, m.file));
    expect(result.valid).toBe(false);
    // The reference: "invalid offset for tensor `weight`" (the first tensor must start at 0).
    expect(result.errors[0]).toMatchObject({ code: 'InvalidOffset', tensor: 'weight' });
    await expect(readHeader(new BytesSource(bytes, m.file))).rejects.toMatchObject({ code: 'InvalidOffset' });
  });
});
