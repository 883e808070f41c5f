/** GGUF through the built CLI: inspect, validate, identify (fixtures written by gguf-py's GGUFWriter). */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { REPO, tempDir, tensorport } from './helpers.ts';

const gg = await requirePython(['gguf', 'numpy']);

const GGUF = join(REPO, 'fixtures/gguf');

interface GgufManifest {
  kv: Array<{ key: string; type: string; value: unknown }>;
  tensors: Array<{ name: string; type: string; dims: number[]; dataOffset: number; nBytes: number }>;
}
const manifestOf = async (f: string): Promise<GgufManifest> => JSON.parse(await readFile(join(GGUF, `${f}.json`), 'utf8')) as GgufManifest;

describe('tensorport inspect / validate / identify on GGUF', () => {
  it('inspect --json gives the tensors GGUFReader reads, with ggml types, parameters and bits per weight', async () => {
    const m = await manifestOf('kitchen.gguf');
    const r = await tensorport('inspect', join(GGUF, 'kitchen.gguf'), '--json');
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.format).toBe('gguf');
    expect(report.tensors.map((t: { name: string }) => t.name)).toEqual(m.tensors.map((t) => t.name));
    for (const [i, t] of m.tensors.entries()) {
      const got = report.tensors[i];
      expect(got.dtype).toBe(t.type);
      expect(got.ggmlType).toBe(t.type);
      expect(got.shape).toEqual([...t.dims].reverse());
      expect(got.bytes).toBe(t.nBytes);
      expect(got.offsets).toEqual([t.dataOffset, t.dataOffset + t.nBytes]);
    }
    const params = m.tensors.reduce((s, t) => s + t.dims.reduce((a, b) => a * b, 1), 0);
    const bytes = m.tensors.reduce((s, t) => s + t.nBytes, 0);
    expect(report.totals.parameters).toBe(params);
    expect(report.gguf).toMatchObject({ version: 3, architecture: 'llama', alignment: 64, parameters: params, bytes });
    expect(report.gguf.bitsPerWeight).toBeCloseTo((bytes * 8) / params, 10);
    expect(report.gguf.types.Q4_0).toEqual({ tensors: 1, parameters: 128, bitsPerWeight: 4.5 });
    expect(Object.keys(report.metadata)).toEqual(m.kv.map((k) => k.key));
  });

  it('the human table names the architecture, ggml types and bits per weight', async () => {
    const r = await tensorport('inspect', join(GGUF, 'kitchen.gguf'));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/gguf: version 3, architecture llama, alignment 64/);
    expect(r.stdout).toMatch(/e\.q4_k\s+Q4_K\s+\[3, 256\]/);
    expect(r.stdout).toMatch(/Q4_0\s+1\s+128\s+72 B\s+4\.50/);
  });

  it.skipIf(!gg)('metadata arrays are cut after 16 elements unless --all-metadata', async () => {
    const path = join(await tempDir(), 'vocab.gguf');
    await runPython(gg!.exe, `
import sys, gguf
w = gguf.GGUFWriter(sys.argv[1], 'llama')
w.add_tokenizer_model('gpt2')
w.add_token_list([f'tok{i}' for i in range(40)])
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
`, { args: [path] });
    const tokens = Array.from({ length: 40 }, (_, i) => `tok${i}`);
    const cut = JSON.parse((await tensorport('inspect', path, '--json')).stdout);
    expect(cut.metadata['tokenizer.ggml.tokens']).toBe(JSON.stringify([...tokens.slice(0, 16), '… 24 more']));
    expect(cut.gguf.tokenizer).toEqual({ model: 'gpt2', tokens: 40, merges: 0 });
    const full = JSON.parse((await tensorport('inspect', path, '--json', '--all-metadata')).stdout);
    expect(full.metadata['tokenizer.ggml.tokens']).toBe(JSON.stringify(tokens));
    expect((await tensorport('inspect', path)).stdout).toMatch(/tokenizer: gpt2, 40 tokens, 0 merges/);
  });

  it('validate passes the fixtures and fails a truncated file with a typed error', async () => {
    for (const f of ['tiny.gguf', 'kitchen.gguf']) {
      const r = await tensorport('validate', join(GGUF, f), '--json');
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ valid: true, errors: [] });
    }
    const bytes = await readFile(join(GGUF, 'kitchen.gguf'));
    const path = join(await tempDir(), 'cut.gguf');
    await writeFile(path, bytes.subarray(0, 1500));
    const r = await tensorport('validate', path, '--json');
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout).errors[0].code).toBe('GgufTensorOutOfBounds');
  });

  it('identify says what tensorport does with GGUF; a big-endian file is refused by validate', async () => {
    const r = await tensorport('identify', join(GGUF, 'tiny.gguf'), '--json');
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)[0]).toMatchObject({ kind: 'gguf', can: 'convert, inspect, validate, diff' });
    const be = await tensorport('validate', join(GGUF, 'big-endian.gguf'), '--json');
    expect(be.code).toBe(1);
    expect(JSON.parse(be.stdout).errors[0].code).toBe('GgufBigEndian');
  });
});
