import { spawn } from 'node:child_process';
import { copyFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { inspectPath as inspect, validatePath as validate } from '../src/node.ts';
import { CLI, FIXTURES, REPO, manifest, safetensorsFile, tempDir, tensorport } from './helpers.ts';

/** tensorport's code → the reference crate's error variant (serde errors are one variant there). */
const REFERENCE_VARIANT: Record<string, string> = {
  HeaderTooSmall: 'HeaderTooSmall',
  HeaderTooLarge: 'HeaderTooLarge',
  InvalidHeaderLength: 'InvalidHeaderLength',
  InvalidHeaderUtf8: 'InvalidHeader',
  InvalidHeaderJson: 'InvalidHeaderDeserialization',
  InvalidHeaderStructure: 'InvalidHeaderDeserialization',
  UnknownDtype: 'InvalidHeaderDeserialization',
  InvalidOffset: 'InvalidOffset',
  ValidationOverflow: 'ValidationOverflow',
  MisalignedSlice: 'MisalignedSlice',
  TensorInvalidInfo: 'TensorInvalidInfo',
  MetadataIncompleteBuffer: 'MetadataIncompleteBuffer',
};

const SHARDS = [1, 2, 3, 4].map((k) => `sharded/model-0000${k}-of-00004.safetensors`);

describe('inspect --json', () => {
  it('reports format, metadata, every tensor and its absolute offsets as the reference wrote them', async () => {
    const m = await manifest('minimal.safetensors');
    const r = await tensorport('inspect', join(FIXTURES, 'minimal.safetensors'), '--json');
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    const report = JSON.parse(r.stdout);
    expect(report.format).toBe('safetensors');
    expect(report.metadata).toEqual(m.metadata);
    const dataStart = 8 + m.headerLength;
    expect(report.tensors).toEqual(
      m.tensors.map((t) => ({
        name: t.name,
        dtype: t.dtype,
        shape: t.shape,
        bytes: t.byteLength,
        offsets: [dataStart + t.dataOffsets[0], dataStart + t.dataOffsets[1]],
        file: join(FIXTURES, 'minimal.safetensors'),
      })),
    );
    expect(report.files).toEqual([{ path: join(FIXTURES, 'minimal.safetensors'), bytes: m.fileSize }]);
  });

  it('totals parameters and bytes per dtype', async () => {
    const m = await manifest('transformer_shard.safetensors');
    const report = JSON.parse((await tensorport('inspect', join(FIXTURES, 'transformer_shard.safetensors'), '--json')).stdout);
    const params = m.tensors.reduce((s, t) => s + t.shape.reduce((a, b) => a * b, 1), 0);
    const bytes = m.tensors.reduce((s, t) => s + t.byteLength, 0);
    expect(report.totals.tensors).toBe(m.tensors.length);
    expect(report.totals.parameters).toBe(params);
    expect(report.totals.bytes).toBe(bytes);
    expect(Object.keys(report.totals.byDtype)).toEqual(['BF16']);
    expect(report.totals.byDtype.BF16).toEqual({ tensors: m.tensors.length, parameters: params, bytes });
  });

  it('reads a sharded directory: every shard tensor with its file, metadata from the shards', async () => {
    const manifests = await Promise.all(SHARDS.map((s) => manifest(s)));
    const report = await inspect(join(FIXTURES, 'sharded'));
    expect(report.format).toBe('safetensors-sharded');
    expect(report.metadata).toEqual({ format: 'pt' });
    expect(report.files.map((f) => f.path)).toEqual(SHARDS.map((s) => join(FIXTURES, s)));
    const expected = manifests.flatMap((m, k) =>
      m.tensors.map((t) => ({ name: t.name, file: join(FIXTURES, SHARDS[k]!), offsets: [8 + m.headerLength + t.dataOffsets[0], 8 + m.headerLength + t.dataOffsets[1]] })),
    );
    expect(report.tensors.map((t) => ({ name: t.name, file: t.file, offsets: t.offsets }))).toEqual(expected);
  });

  it('gives null metadata for a file without __metadata__ and an empty list for no tensors', async () => {
    const report = await inspect(join(FIXTURES, 'no_tensors.safetensors'));
    expect(report.metadata).toBeNull();
    expect(report.tensors).toEqual([]);
    expect(report.totals).toEqual({ tensors: 0, parameters: 0, bytes: 0, byDtype: {} });
  });
});

describe('inspect (table)', () => {
  it('prints an aligned table with human sizes and the totals', async () => {
    const m = await manifest('transformer_shard.safetensors');
    const r = await tensorport('inspect', join(FIXTURES, 'transformer_shard.safetensors'));
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    const header = lines.findIndex((l) => l.startsWith('name '));
    const rows = lines.slice(header + 1, header + 1 + m.tensors.length);
    expect(rows.map((l) => l.split(/\s+/)[0])).toEqual(m.tensors.map((t) => t.name));
    // Aligned: the dtype column starts at the same position in the header and in every row.
    const col = lines[header]!.indexOf('dtype');
    for (const row of rows) expect(row.slice(col, col + 4)).toBe('BF16');
    expect(r.stdout).toMatch(/KiB/);
    expect(lines.find((l) => l.startsWith('total'))).toContain(String(m.tensors.length));
  });
});

describe('output into a closed pipe', () => {
  it('stops quietly when the reader goes away (inspect | head)', async () => {
    const dir = await tempDir();
    const file = join(dir, 'many.safetensors');
    const tensors: Record<string, { dtype: string; shape: number[]; data: Uint8Array }> = {};
    for (let i = 0; i < 20_000; i++) tensors[`model.layers.${i}.weight`] = { dtype: 'F16', shape: [2], data: new Uint8Array(4) };
    await writeFile(file, safetensorsFile(tensors));
    const child = spawn(process.execPath, [CLI, 'inspect', file], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    // Like `head -1`: take the first chunk, then close the pipe while the CLI is still writing.
    child.stdout.once('data', () => child.stdout.destroy());
    const code = await new Promise<number | null>((done) => child.on('close', done));
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });
});

describe('validate', () => {
  it('exits 0 with {valid: true} on a good file', async () => {
    const r = await tensorport('validate', join(FIXTURES, 'all_dtypes.safetensors'), '--json');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report).toMatchObject({ valid: true, errors: [] });
    expect(Array.isArray(report.warnings)).toBe(true);
  });

  it('exits 1 and locates the error (code, tensor, byte offset, file)', async () => {
    const file = join(FIXTURES, 'negative/doc_offsets_3_8195_truncated.safetensors');
    const json = await tensorport('validate', file, '--json');
    expect(json.code).toBe(1);
    const report = JSON.parse(json.stdout);
    expect(report.valid).toBe(false);
    expect(report.errors).toHaveLength(1);
    expect(report.errors[0]).toMatchObject({ code: 'InvalidOffset', tensor: 'weight', path: file });
    expect(typeof report.errors[0].offset).toBe('number');
    const text = await tensorport('validate', file);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(new RegExp(`^error   InvalidOffset: .*\\(tensor 'weight', at byte ${report.errors[0].offset}`, 'm'));
    expect(text.stdout).toContain('INVALID');
  });

  it('agrees with the reference on every file of the malformed corpus', async () => {
    const verdicts = JSON.parse(await readFile(join(FIXTURES, 'malformed/verdicts.json'), 'utf8')) as Array<{ file: string; accepted: boolean; referenceVariant?: string }>;
    expect(verdicts.length).toBeGreaterThan(100);
    for (const v of verdicts) {
      const report = await validate(join(FIXTURES, 'malformed', v.file));
      // Duplicate tensor names are refused on purpose although the reference accepts them (last wins).
      if (v.accepted && report.errors[0]?.code === 'DuplicateTensorName') continue;
      expect({ file: v.file, valid: report.valid }).toEqual({ file: v.file, valid: v.accepted });
      // A damaged .safetensors is read as safetensors, so the report names the reference's error.
      if (!v.accepted && report.errors[0]!.code !== 'DuplicateTensorName') expect(REFERENCE_VARIANT[report.errors[0]!.code], v.file).toBe(v.referenceVariant);
      for (const e of report.errors) expect(e).toMatchObject({ code: expect.any(String), message: expect.any(String), path: expect.any(String) });
    }
  });

  it('validates a sharded directory shard by shard and lists every bad shard', async () => {
    const dir = await tempDir();
    for (const f of ['model.safetensors.index.json', ...SHARDS.map((s) => s.slice('sharded/'.length))]) await copyFile(join(FIXTURES, 'sharded', f), join(dir, f));
    expect((await validate(dir)).valid).toBe(true);
    // Break two shards: cut the last byte of one, overwrite the length prefix of another.
    const s2 = join(dir, 'model-00002-of-00004.safetensors');
    const s4 = join(dir, 'model-00004-of-00004.safetensors');
    const b2 = await readFile(s2);
    await writeFile(s2, b2.subarray(0, b2.length - 1));
    const b4 = await readFile(s4);
    b4.writeBigUInt64LE(10n ** 9n, 0);
    await writeFile(s4, b4);
    const r = await tensorport('validate', dir, '--json');
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout);
    expect(report.errors.map((e: { code: string; path: string }) => [e.code, e.path])).toEqual([
      ['MetadataIncompleteBuffer', s2],
      ['HeaderTooLarge', s4],
    ]);
  });

  it('reports a shard the index names but the directory lacks', async () => {
    const dir = await tempDir();
    for (const f of ['model.safetensors.index.json', ...SHARDS.slice(0, 3).map((s) => s.slice('sharded/'.length))]) await copyFile(join(FIXTURES, 'sharded', f), join(dir, f));
    const report = await validate(dir);
    expect(report.valid).toBe(false);
    expect(report.errors).toEqual([expect.objectContaining({ code: 'ShardMissing', path: join(dir, 'model-00004-of-00004.safetensors') })]);
  });

  it('reports an unrecognised file as invalid instead of crashing', async () => {
    const dir = await tempDir();
    const file = join(dir, 'weights.h5');
    await writeFile(file, Buffer.from('\x89HDF\r\n\x1a\n' + '\0'.repeat(64), 'latin1'));
    const r = await tensorport('validate', file, '--json');
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ valid: false, format: null, errors: [{ code: 'UnsupportedFormat', path: file }] });
    const missing = await tensorport('validate', join(dir, 'nope.safetensors'));
    expect(missing.code).toBe(1);
    expect(missing.stdout).toMatch(/^error   IoError: /m);
  });
});
