import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { REPO, listDir, safetensorsFile, tempDir, tensorDigests, tensorport } from './helpers.ts';

const NPZ = join(REPO, 'fixtures/npz');
const py = await requirePython(['numpy']);
const pyMl = await requirePython(['numpy', 'ml_dtypes']);

/** The hostile archives the fixture notes describe as malformed (the others are odd but valid ZIPs). */
const MALFORMED = [
  'bad_crc', 'cd_count_too_high', 'cd_extra_overrun', 'cd_ffffffff_without_zip64_extra', 'cd_offset_wrong', 'cd_size_past_eocd',
  'datadesc_wrong', 'deflate64_method', 'deflate_crc_mismatch', 'deflate_garbage', 'deflate_ratio_1000', 'deflate_truncated_stream',
  'deflate_usize_lies', 'duplicate_names', 'encrypted_flag', 'fake_eocd_in_comment', 'lfh_cd_mismatch', 'lfh_cd_name_mismatch',
  'lfh_crc_mismatch', 'lfh_method_mismatch', 'lho_past_cd', 'multi_disk', 'overlapping_entries', 'prepended_junk',
  'same_local_header', 'stored_size_mismatch', 'unknown_method_bzip2', 'utf8_flag_invalid_name', 'zip64_locator_bad_offset',
  'zip64eocd_cd_ffffffff_without_extra',
];

describe('npz and npy through the CLI', () => {
  it('npz → safetensors → npz → safetensors: the two safetensors files are identical, for every numpy fixture', async () => {
    const dir = await tempDir();
    const files = (await readdir(join(NPZ, 'npz'))).filter((f) => f.endsWith('.npz'));
    expect(files.length).toBeGreaterThan(4);
    for (const f of files) {
      const a = join(dir, `${f}.a.safetensors`);
      const z = join(dir, `${f}.npz`);
      const b = join(dir, `${f}.b.safetensors`);
      for (const [from, to] of [[join(NPZ, 'npz', f), a], [a, z], [z, b]] as const) {
        const r = await tensorport('convert', from, to);
        expect(r.code, `${from} → ${to}: ${r.stderr}`).toBe(0);
      }
      expect(Buffer.compare(await readFile(a), await readFile(b)), f).toBe(0);
    }
  });

  it('the empty archive np.savez() writes is detected as npz (0 tensors)', async () => {
    const r = await tensorport('inspect', join(NPZ, 'npz/savez_empty.npz'), '--json');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ format: 'npz', tensors: [] });
  });

  it('stored by default, deflated with --compress; both hold the same tensors', async () => {
    const dir = await tempDir();
    const src = join(NPZ, 'npz/savez.npz');
    expect((await tensorport('convert', src, join(dir, 'stored.npz'))).code).toBe(0);
    expect((await tensorport('convert', src, join(dir, 'deflated.npz'), '--compress')).code).toBe(0);
    const stored = await readFile(join(dir, 'stored.npz'));
    const deflated = await readFile(join(dir, 'deflated.npz'));
    // Local header: compression method at offset 8 (0 stored, 8 deflate).
    expect(stored.readUInt16LE(8)).toBe(0);
    expect(deflated.readUInt16LE(8)).toBe(8);
    for (const f of ['stored', 'deflated']) expect((await tensorport('convert', join(dir, `${f}.npz`), join(dir, `${f}.safetensors`))).code).toBe(0);
    expect(Buffer.compare(await readFile(join(dir, 'stored.safetensors')), await readFile(join(dir, 'deflated.safetensors')))).toBe(0);
  });

  it('--dtype casts on the way from npz', async () => {
    const dir = await tempDir();
    const out = join(dir, 'f16.safetensors');
    const r = await tensorport('convert', join(NPZ, 'npz/savez.npz'), out, '--dtype', 'f16');
    expect(r.code, r.stderr).toBe(0);
    const t = await tensorDigests(out);
    expect(t.get('f4')?.dtype).toBe('F16');
    expect(t.get('f8')?.dtype).toBe('F16');
    expect(t.get('i4')?.dtype).toBe('I32');
  });

  it('npy: one tensor both ways, named after the file stem or --name; several tensors refused (exit 2) with no file', async () => {
    const dir = await tempDir();
    const data = new Uint8Array(new Float32Array([1, 2, 3, 4, 5, 6]).buffer);
    await writeFile(join(dir, 'one.safetensors'), safetensorsFile({ w: { dtype: 'F32', shape: [2, 3], data } }));
    expect((await tensorport('convert', join(dir, 'one.safetensors'), join(dir, 'weight.npy'))).code).toBe(0);
    expect((await tensorport('convert', join(dir, 'weight.npy'), join(dir, 'back.safetensors'))).code).toBe(0);
    const back = await tensorDigests(join(dir, 'back.safetensors'));
    expect([...back.keys()]).toEqual(['weight']);
    expect(Buffer.compare(back.get('weight')!.bytes, data)).toBe(0);
    expect((await tensorport('convert', join(dir, 'weight.npy'), join(dir, 'named.safetensors'), '--name', 'lm_head.weight')).code).toBe(0);
    expect([...(await tensorDigests(join(dir, 'named.safetensors'))).keys()]).toEqual(['lm_head.weight']);

    await writeFile(join(dir, 'two.safetensors'), safetensorsFile({ a: { dtype: 'U8', shape: [1], data: new Uint8Array([1]) }, b: { dtype: 'U8', shape: [1], data: new Uint8Array([2]) } }));
    const r = await tensorport('convert', join(dir, 'two.safetensors'), join(dir, 'two.npy'));
    expect(r.code).toBe(2); // the output path asks for what the input cannot give: a usage error
    expect(r.stderr).toMatch(/one array.*2 tensors/);
    expect(await listDir(dir)).not.toContain('two.npy');
  });

  it('<V1 arrays need --void1, which names their dtype', async () => {
    const dir = await tempDir();
    const src = join(NPZ, 'npy/f8e4m3fn.npy');
    const refused = await tensorport('convert', src, join(dir, 'x.safetensors'));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/void1/);
    expect(await listDir(dir)).toEqual([]);
    const r = await tensorport('convert', src, join(dir, 'x.safetensors'), '--void1', 'f8_e4m3');
    expect(r.code, r.stderr).toBe(0);
    expect((await tensorDigests(join(dir, 'x.safetensors'))).get('f8e4m3fn')?.dtype).toBe('F8_E4M3');
    const bad = await tensorport('convert', src, join(dir, 'y.safetensors'), '--void1', 'float9');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--void1 float9/);
  });

  it.each(MALFORMED)('hostile %s.npz: convert exits 1 with a typed error and writes nothing; validate says INVALID', async (name) => {
    const dir = await tempDir();
    const r = await tensorport('convert', join(NPZ, 'hostile', `${name}.npz`), join(dir, 'out.safetensors'));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^tensorport: (Zip|Npy)[A-Za-z0-9]+: /);
    expect(await listDir(dir)).toEqual([]);
    const v = await tensorport('validate', join(NPZ, 'hostile', `${name}.npz`));
    expect(v.code).toBe(1);
    expect(v.stdout).toMatch(/INVALID/);
  });

  it('--no-crc converts a member whose CRC-32 is wrong, with a warning; without it the convert fails and writes nothing', async () => {
    const dir = await tempDir();
    const input = join(NPZ, 'hostile', 'bad_crc.npz');
    const out = join(dir, 'bad-crc.safetensors');
    const refused = await tensorport('convert', input, out);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/ZipCrcMismatch: member "a\.npy" has CRC-32 0x[0-9a-f]{8}, the directory says 0xdeadbeef/);
    expect(await listDir(dir)).toEqual([]);
    const r = await tensorport('convert', input, out, '--no-crc');
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/warning: ZipCrcNotChecked: .*bad_crc\.npz: the CRC-32 of its 1 member was not checked \(--no-crc\)/);
    // The bytes are the member's own, as numpy reads them when the CRC is ignored.
    const tensors = await tensorDigests(out);
    expect([...tensors.keys()]).toEqual(['a']);
    const bytes = tensors.get('a')!.bytes;
    expect(bytes.byteLength).toBeGreaterThan(0);
    expect(Buffer.from(await readFile(input)).includes(Buffer.from(bytes))).toBe(true);
    const json = JSON.parse((await tensorport('convert', input, out, '--no-crc', '--force', '--json')).stdout) as { warnings: Array<{ code: string }> };
    expect(json.warnings.map((w) => w.code)).toContain('ZipCrcNotChecked');
  });
  it('validate reads every member of a good npz and npy', async () => {
    for (const f of ['npz/savez.npz', 'npz/savez_compressed.npz', 'npy/fortran_2d.npy']) {
      const r = await tensorport('validate', join(NPZ, f), '--json');
      expect(r.code, f).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ valid: true, format: f.endsWith('.npy') ? 'npy' : 'npz' });
    }
  });

  it('an npz with an object array is refused (no pickle is run)', async () => {
    const dir = await tempDir();
    const r = await tensorport('convert', join(NPZ, 'reference/savez_object.npz'), join(dir, 'o.safetensors'));
    expect(r.code).toBe(1);
    expect(await listDir(dir)).toEqual([]);
  });
});

describe.skipIf(!py)('interop with numpy', () => {
  it('np.load reads our stored and deflated npz with the arrays np.load reads from the source (big-endian ones as little-endian)', async () => {
    const dir = await tempDir();
    const src = join(NPZ, 'npz/savez.npz');
    expect((await tensorport('convert', src, join(dir, 'mid.safetensors'))).code).toBe(0);
    expect((await tensorport('convert', join(dir, 'mid.safetensors'), join(dir, 'stored.npz'))).code).toBe(0);
    expect((await tensorport('convert', join(dir, 'mid.safetensors'), join(dir, 'deflated.npz'), '--compress')).code).toBe(0);
    const out = await runPython(py!.exe, `
import sys, json, numpy as np
a = np.load(sys.argv[1])
res = {}
for f in sys.argv[2:]:
    b = np.load(f)
    res[f] = sorted(a.files) == sorted(b.files) and all(a[k].dtype.newbyteorder('<') == b[k].dtype and a[k].shape == b[k].shape and np.ascontiguousarray(a[k], dtype=a[k].dtype.newbyteorder('<')).tobytes() == b[k].tobytes() for k in a.files)
print(json.dumps({"ok": all(res.values()), "n": len(a.files)}))
`, { args: [src, join(dir, 'stored.npz'), join(dir, 'deflated.npz')] });
    expect(JSON.parse(out)).toEqual({ ok: true, n: 20 });
  });

  it('np.load reads our .npy', async () => {
    const dir = await tempDir();
    expect((await tensorport('convert', join(NPZ, 'npy/fortran_3d.npy'), join(dir, 'x.safetensors'))).code).toBe(0);
    expect((await tensorport('convert', join(dir, 'x.safetensors'), join(dir, 'x.npy'))).code).toBe(0);
    const out = await runPython(py!.exe, `
import sys, numpy as np
a = np.load(sys.argv[1]); b = np.load(sys.argv[2])
print(a.shape == b.shape and a.dtype == b.dtype and (a == b).all())
`, { args: [join(NPZ, 'npy/fortran_3d.npy'), join(dir, 'x.npy')] });
    expect(out.trim()).toBe('True');
  });
});

describe.skipIf(!pyMl)('interop with ml_dtypes', () => {
  it('a float8 .npy (<V1) read with --void1 and written back as npz holds the values ml_dtypes reads', async () => {
    const dir = await tempDir();
    const src = join(NPZ, 'npy/f8e4m3fn.npy');
    expect((await tensorport('convert', src, join(dir, 'x.safetensors'), '--void1', 'F8_E4M3')).code).toBe(0);
    expect((await tensorport('convert', join(dir, 'x.safetensors'), join(dir, 'x.npz'))).code).toBe(0);
    const out = await runPython(pyMl!.exe, `
import sys, numpy as np, ml_dtypes
a = np.load(sys.argv[1]).view(ml_dtypes.float8_e4m3fn)
b = np.load(sys.argv[2])["f8e4m3fn"].view(ml_dtypes.float8_e4m3fn)
print(a.shape == b.shape and a.astype(np.float32).tobytes() == b.astype(np.float32).tobytes() and a.size > 0)
`, { args: [src, join(dir, 'x.npz')] });
    expect(out.trim()).toBe('True');
  });
});
