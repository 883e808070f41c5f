import { copyFile, link, mkdir, readFile, stat, symlink, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIXTURES, fileSha256, listDir, manifest, safetensorsFile, tempDir, tensorDigests, tensorport } from './helpers.ts';

const minimal = join(FIXTURES, 'minimal.safetensors');
const transformer = join(FIXTURES, 'transformer_shard.safetensors');

describe('convert: round trips', () => {
  it('rewrites a reference file byte for byte and validates it', async () => {
    const dir = await tempDir();
    const out = join(dir, 'copy.safetensors');
    const r = await tensorport('convert', minimal, out);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('validated');
    expect(await fileSha256(out)).toBe((await manifest('minimal.safetensors')).fileSha256);
  });

  it('--no-fsync writes the same bytes (only durability is traded), for safetensors and npz outputs', async () => {
    const dir = await tempDir();
    for (const name of ['a.safetensors', 'a.npz']) {
      const synced = await tensorport('convert', transformer, join(dir, `synced-${name}`));
      const fast = await tensorport('convert', transformer, join(dir, `fast-${name}`), '--no-fsync');
      expect(synced.code, synced.stderr).toBe(0);
      expect(fast.code, fast.stderr).toBe(0);
      expect(await fileSha256(join(dir, `fast-${name}`))).toBe(await fileSha256(join(dir, `synced-${name}`)));
    }
  });

  it('--dtype f16 / bf16 casts float values exactly and keeps names and shapes', async () => {
    const dir = await tempDir();
    // Encodings are the IEEE bit patterns. 65504 (F16's max) has 11 significant bits: BF16 keeps 8,
    // and round-to-nearest gives 65536 (0x4780), where truncation would give 65280 (0x477f).
    const values = [0, 1, -2, 0.25, 1.5, 65504];
    const f16 = [0x0000, 0x3c00, 0xc000, 0x3400, 0x3e00, 0x7bff];
    const bf16 = [0x0000, 0x3f80, 0xc000, 0x3e80, 0x3fc0, 0x4780];
    const input = join(dir, 'f32.safetensors');
    await writeFile(input, safetensorsFile({ x: { dtype: 'F32', shape: [2, 3], data: new Uint8Array(new Float32Array(values).buffer) } }));
    for (const [flag, dtype, bits] of [['f16', 'F16', f16], ['bf16', 'BF16', bf16]] as const) {
      const out = join(dir, `${flag}.safetensors`);
      const r = await tensorport('convert', input, out, '--dtype', flag);
      expect(r.code).toBe(0);
      const x = (await tensorDigests(out)).get('x')!;
      expect({ dtype: x.dtype, shape: x.shape }).toEqual({ dtype, shape: [2, 3] });
      expect([...new Uint16Array(x.bytes.buffer, x.bytes.byteOffset, 6)]).toEqual(bits);
    }
  });

  it('--dtype f32 widens every float tensor and leaves integers, BOOL and quantized dtypes untouched (with a warning)', async () => {
    const dir = await tempDir();
    const out = join(dir, 'f32.safetensors');
    const r = await tensorport('convert', join(FIXTURES, 'all_dtypes.safetensors'), out, '--dtype', 'f32');
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/warning: CastSkipped: kept .*I64.* unchanged/);
    const before = await tensorDigests(join(FIXTURES, 'all_dtypes.safetensors'));
    const after = await tensorDigests(out);
    expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
    for (const [name, b] of before) {
      const a = after.get(name)!;
      expect(a.shape).toEqual(b.shape);
      if (['F16', 'BF16', 'F64', 'F32'].includes(b.dtype)) {
        expect(a.dtype).toBe('F32');
      } else {
        expect({ name, dtype: a.dtype, sha256: a.sha256 }).toEqual({ name, dtype: b.dtype, sha256: b.sha256 });
      }
    }
  });

  it('shards with a small --max-shard-size and merges back to the identical file', async () => {
    const dir = await tempDir();
    const shards = join(dir, 'shards') + '/';
    const split = await tensorport('convert', transformer, shards, '--max-shard-size', '5KB');
    expect(split.code).toBe(0);
    const files = await listDir(shards);
    expect(files).toContain('model.safetensors.index.json');
    const shardFiles = files.filter((f) => /^model-\d{5}-of-\d{5}\.safetensors$/.test(f));
    expect(shardFiles.length).toBeGreaterThan(3);
    expect(files).toEqual([...shardFiles, 'model.safetensors.index.json'].sort());
    // Every shard holds at most 5000 tensor bytes unless it is a single bigger tensor.
    for (const f of shardFiles) {
      const tensors = [...(await tensorDigests(join(shards, f))).values()];
      const bytes = tensors.reduce((s, t) => s + t.bytes.byteLength, 0);
      expect(bytes <= 5000 || tensors.length === 1).toBe(true);
    }
    const index = JSON.parse(await readFile(join(shards, 'model.safetensors.index.json'), 'utf8'));
    const m = await manifest('transformer_shard.safetensors');
    expect(Object.keys(index.weight_map).sort()).toEqual(m.tensors.map((t) => t.name).sort());
    expect((await tensorport('validate', shards)).code).toBe(0);

    const merged = join(dir, 'merged.safetensors');
    expect((await tensorport('convert', shards, merged)).code).toBe(0);
    expect(await fileSha256(merged)).toBe(m.fileSha256);
  });

  it('merges a sharded checkpoint given by its index file', async () => {
    const dir = await tempDir();
    const out = join(dir, 'one.safetensors');
    const r = await tensorport('convert', join(FIXTURES, 'sharded/model.safetensors.index.json'), out, '--json');
    expect(r.code).toBe(0);
    const result = JSON.parse(r.stdout);
    const shards = await Promise.all([1, 2, 3, 4].map((k) => manifest(`sharded/model-0000${k}-of-00004.safetensors`)));
    const all = shards.flatMap((s) => s.tensors);
    expect(result).toMatchObject({ from: 'safetensors-sharded', to: 'safetensors', files: [out], tensors: all.length, bytes: (await stat(out)).size });
    const digests = await tensorDigests(out);
    for (const t of all) expect(digests.get(t.name)?.sha256).toBe(t.sha256);
  });
});

describe('convert: output paths', () => {
  it('an existing directory receives model.safetensors', async () => {
    const dir = await tempDir();
    const r = await tensorport('convert', minimal, dir);
    expect(r.code).toBe(0);
    expect(await listDir(dir)).toEqual(['model.safetensors']);
  });

  it("a path ending with '/' is created and receives model.safetensors when one shard suffices", async () => {
    const dir = await tempDir();
    const r = await tensorport('convert', minimal, join(dir, 'a/b') + '/');
    expect(r.code).toBe(0);
    expect(await listDir(join(dir, 'a/b'))).toEqual(['model.safetensors']);
  });

  it('a file path is one file whatever its size; --max-shard-size with it is a usage error', async () => {
    const dir = await tempDir();
    const r = await tensorport('convert', transformer, join(dir, 'big.safetensors'), '--max-shard-size', '1KB');
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^tensorport: usage: .*directory/);
    expect(await listDir(dir)).toEqual([]);
  });
});

describe('convert: refusals', () => {
  it('refuses an existing output without --force and replaces it with --force', async () => {
    const dir = await tempDir();
    const out = join(dir, 'out.safetensors');
    await writeFile(out, 'keep me');
    const r = await tensorport('convert', minimal, out);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^tensorport: OutputExists: /);
    expect(await readFile(out, 'utf8')).toBe('keep me');
    expect((await tensorport('convert', minimal, out, '--force')).code).toBe(0);
    expect(await fileSha256(out)).toBe(await fileSha256(minimal));
    expect(await listDir(dir)).toEqual(['out.safetensors']);
  });

  it('refuses an existing shard in an output directory', async () => {
    const dir = await tempDir();
    expect((await tensorport('convert', transformer, dir, '--max-shard-size', '8KB')).code).toBe(0);
    const before = await listDir(dir);
    const again = await tensorport('convert', transformer, dir, '--max-shard-size', '8KB');
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('OutputExists');
    expect(await listDir(dir)).toEqual(before);
  });

  it('never writes onto the input: same path, symlink, hard link, or a shard of a directory input', async () => {
    const dir = await tempDir();
    const input = join(dir, 'in.safetensors');
    await copyFile(minimal, input);
    const digest = await fileSha256(input);
    await symlink(input, join(dir, 'sym.safetensors'));
    await link(input, join(dir, 'hard.safetensors'));
    for (const out of [input, join(dir, 'sym.safetensors'), join(dir, 'hard.safetensors')]) {
      const r = await tensorport('convert', input, out, '--force', '--dtype', 'f32');
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^tensorport: SameInputOutput: /);
    }
    // The symlink as input, the real file as output.
    expect((await tensorport('convert', join(dir, 'sym.safetensors'), input, '--force')).code).toBe(1);
    expect(await fileSha256(input)).toBe(digest);

    const shards = join(dir, 'shards');
    await mkdir(shards);
    expect((await tensorport('convert', transformer, shards, '--max-shard-size', '8KB')).code).toBe(0);
    const shard = join(shards, 'model-00001-of-00003.safetensors');
    const shardDigest = await fileSha256(shard);
    const r = await tensorport('convert', shards, shard, '--force');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('SameInputOutput');
    const inPlace = await tensorport('convert', shards, shards, '--force', '--max-shard-size', '8KB', '--dtype', 'f32');
    expect(inPlace.code).toBe(1);
    expect(inPlace.stderr).toContain('SameInputOutput');
    expect(await fileSha256(shard)).toBe(shardDigest);
  });

  it('leaves nothing at the target when the input is truncated', async () => {
    const dir = await tempDir();
    const input = join(dir, 'cut.safetensors');
    await copyFile(transformer, input);
    await truncate(input, (await stat(input)).size - 100);
    for (const out of [join(dir, 'out.safetensors'), join(dir, 'new') + '/']) {
      const r = await tensorport('convert', input, out);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^tensorport: MetadataIncompleteBuffer: /);
    }
    expect(await listDir(dir)).toEqual(['cut.safetensors']);
  });

  it('detects safetensors by content: a .bin works with a warning; other formats are named', async () => {
    const dir = await tempDir();
    const bin = join(dir, 'pytorch_model.bin');
    await copyFile(minimal, bin);
    const r = await tensorport('convert', bin, join(dir, 'model.safetensors'));
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/warning: ExtensionMismatch: .*'\.bin'.*safetensors/);
    expect(await fileSha256(join(dir, 'model.safetensors'))).toBe(await fileSha256(minimal));

    // GGUF is a registry format now: a damaged one gets its reader's error. HDF5 is only named.
    const gguf = join(dir, 'model.safetensors.gguf');
    await writeFile(gguf, Buffer.concat([Buffer.from('GGUF'), Buffer.alloc(60)]));
    const g = await tensorport('convert', gguf, join(dir, 'x.safetensors'));
    expect(g.code).toBe(1);
    expect(g.stderr).toMatch(/^tensorport: GgufUnsupportedVersion: /);
    const h5 = join(dir, 'model.safetensors.h5');
    await writeFile(h5, Buffer.concat([Buffer.from([0x89, 0x48, 0x44, 0x46, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(60)]));
    const h = await tensorport('convert', h5, join(dir, 'x.safetensors'));
    expect(h.code).toBe(1);
    expect(h.stderr).toMatch(/^tensorport: UnsupportedFormat: .*HDF5/);
    const junk = join(dir, 'junk.dat');
    await writeFile(junk, 'hello, world');
    const j = await tensorport('convert', junk, join(dir, 'y.safetensors'));
    expect(j.code).toBe(1);
    expect(j.stderr).toMatch(/^tensorport: UnknownFormat: /);
    // Named .safetensors, the same bytes are read as safetensors: the error says what is wrong.
    await copyFile(junk, join(dir, 'junk.safetensors'));
    const k = await tensorport('convert', join(dir, 'junk.safetensors'), join(dir, 'z.safetensors'));
    expect(k.code).toBe(1);
    expect(k.stderr).toMatch(/^tensorport: HeaderTooLarge: .*\(at byte 0\)$/m);
    expect(await listDir(dir)).toEqual(['junk.dat', 'junk.safetensors', 'model.safetensors', 'model.safetensors.gguf', 'model.safetensors.h5', 'pytorch_model.bin']);
  });
});

describe('convert --json', () => {
  it('prints exactly one JSON object and nothing on stderr', async () => {
    const dir = await tempDir();
    const r = await tensorport('convert', transformer, join(dir, 'o') + '/', '--json', '--dtype', 'f16', '--max-shard-size', '10KB');
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    const result = JSON.parse(r.stdout);
    const m = await manifest('transformer_shard.safetensors');
    expect(result.tensors).toBe(m.tensors.length);
    expect(result.cast).toBe(m.tensors.length);
    expect(result.files.length).toBeGreaterThan(1);
    let total = 0;
    for (const f of result.files) total += (await stat(f)).size;
    expect(result.bytes).toBe(total);
    expect(result.warnings).toEqual([]);
  });
});
