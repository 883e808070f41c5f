import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { inspectFiles } from '../src/inspect/index.ts';
import { FIXTURES } from './helpers/browser.ts';
import { bytesFile, fileOf } from './helpers/files.ts';

const fixture = (p: string) => join(FIXTURES, p);
const json = (p: string) => JSON.parse(readFileSync(fixture(p), 'utf8'));

/** A safetensors file from a header object and a data length. */
function safetensors(header: unknown, dataLength: number): Uint8Array<ArrayBuffer> {
  const h = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + h.length + dataLength);
  new DataView(out.buffer).setBigUint64(0, BigInt(h.length), true);
  out.set(h, 8);
  return out;
}

describe('inspectFiles (the worker logic, in Node over File objects)', () => {
  test('every malformed safetensors fixture: the verdict is the reference crate\'s (duplicate names: refused, as core does)', async () => {
    const verdicts = json('safetensors/malformed/verdicts.json') as Array<{ file: string; accepted: boolean; duplicateName?: boolean }>;
    expect(verdicts.length).toBeGreaterThan(100);
    for (const v of verdicts) {
      const r = await inspectFiles([await fileOf(fixture(`safetensors/malformed/${v.file}`))]);
      expect(r.valid, v.file).toBe(v.accepted && !v.duplicateName);
      if (v.duplicateName) expect(r.errors[0]?.code, v.file).toBe('DuplicateTensorName');
      if (!v.accepted) {
        expect(r.errors.length, v.file).toBe(1);
        expect(r.tensors, v.file).toEqual([]);
      }
      // Never more than what was given, never the data section of an accepted file.
      expect(r.bytesRead, v.file).toBeLessThanOrEqual(r.totalBytes);
    }
  });

  test('hostile pickles: refused exactly when a loader must refuse, naming each global the manifest lists', async () => {
    const manifest = json('torch/malicious/manifest.json') as Record<string, { globals: string[]; loadError: string | null }>;
    for (const [file, m] of Object.entries(manifest)) {
      const r = await inspectFiles([await fileOf(fixture(`torch/malicious/${file}`))]);
      // A memo bomb is only deep sharing: the scan walks it in linear time and finds nothing to refuse.
      expect(r.valid, file).toBe(m.loadError === null);
      expect(r.pickle?.safe, file).toBe(m.loadError === null);
      if (m.loadError !== null) expect(r.errors.length, file).toBeGreaterThan(0);
      for (const g of m.globals) expect(r.pickle!.globals.map((x) => x.name), file).toContain(g);
      expect(r.tensors, file).toEqual([]);
    }
  });

  test('hostile ZIPs never throw; each is a verdict', async () => {
    const dir = fixture('npz/hostile');
    const names = readdirSync(dir).filter((n) => n.endsWith('.npz'));
    expect(names.length).toBeGreaterThan(20);
    for (const n of names) {
      const r = await inspectFiles([await fileOf(join(dir, n))]);
      expect(r.format, n).toBe('npz');
      if (!r.valid) expect(r.errors[0]!.code, n).toMatch(/^[A-Z][A-Za-z0-9]+$/);
    }
  });

  test('a sharded index: shards not named by it are marked ignored; a missing one is ShardMissing', async () => {
    const dir = 'safetensors/sharded';
    const index = await fileOf(fixture(`${dir}/model.safetensors.index.json`));
    const shards = await Promise.all([1, 2, 3, 4].map((i) => fileOf(fixture(`${dir}/model-0000${i}-of-00004.safetensors`))));
    const stray = await fileOf(fixture('safetensors/minimal.safetensors'));
    const ok = await inspectFiles([stray, index, ...shards]);
    expect(ok.valid).toBe(true);
    expect(ok.files.map((f) => f.role)).toEqual(['ignored', 'index', 'data', 'data', 'data', 'data']);
    const total = Object.keys(json(`${dir}/model.safetensors.index.json`).weight_map).length;
    expect(ok.tensors.length).toBe(total);
    // Index read whole, each shard's header only.
    expect(ok.bytesRead).toBeLessThan(ok.totalBytes - stray.size);

    const missing = await inspectFiles([index, shards[0]!, shards[1]!, shards[3]!]);
    expect(missing.valid).toBe(false);
    expect(missing.errors[0]).toMatchObject({ code: 'ShardMissing', path: 'model-00003-of-00004.safetensors' });
  });

  test('torch checkpoints, zip and legacy: the tensors torch saved, as the manifest lists them', async () => {
    const manifest = json('torch/checkpoints/manifest.json') as Record<string, { tensors: Record<string, { dtype: string; shape: number[] }> }>;
    for (const file of ['legacy.pt', 'parameters.pt', 'nested.pt', 'legacy_t113.pt']) {
      const r = await inspectFiles([await fileOf(fixture(`torch/checkpoints/${file}`))]);
      expect(r.valid, file).toBe(true);
      expect(r.format, file).toBe(file.startsWith('legacy') ? 'torch-legacy' : 'torch-zip');
      expect(r.pickle?.safe, file).toBe(true);
      const shown = new Map(r.tensors.map((t) => [t.name, t.shape]));
      for (const [name, t] of Object.entries(manifest[file]!.tensors)) {
        // Tied names are listed once; the others point at the kept name in metadata.
        const alias = r.metadata?.find(([k]) => k === name)?.[1];
        expect(shown.get(alias ?? name), `${file}: ${name}`).toEqual(t.shape);
      }
    }
  });

  test('several checkpoints and no index: the first is shown, with a warning', async () => {
    const a = await fileOf(fixture('safetensors/minimal.safetensors'));
    const b = await fileOf(fixture('safetensors/dtype_F32.safetensors'));
    const r = await inspectFiles([a, b]);
    expect(r.warnings[0]!.code).toBe('SeveralCheckpoints');
    expect(r.files.find((f) => f.name === b.name)?.role).toBe('data');
    expect(r.files.find((f) => f.name === a.name)?.role).toBe('ignored');
  });

  test('nothing to inspect, a lone JSON file, and an unknown format are findings', async () => {
    expect((await inspectFiles([])).errors[0]!.code).toBe('NothingToInspect');
    expect((await inspectFiles([bytesFile(new TextEncoder().encode('{}'), 'tokenizer.json')])).errors[0]!.code).toBe('NothingToInspect');
    // GGUF is read through the library's registry, as the CLI reads it: a truncated header is its reader's finding.
    const gguf = await inspectFiles([bytesFile(new TextEncoder().encode('GGUF\x03\0\0\0 and more bytes'), 'x.gguf')]);
    expect(gguf.errors[0]!.code).toMatch(/^Gguf/);
    expect(gguf.format).toBe('gguf');
    const hdf5 = await inspectFiles([bytesFile(new Uint8Array([0x89, 0x48, 0x44, 0x46, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), 'x.h5')]);
    expect(hdf5.errors[0]).toMatchObject({ code: 'UnknownFormat' });
    expect(hdf5.format).toBe('hdf5');
    // A broken .safetensors is still read as one, so the finding names the defect.
    const broken = await inspectFiles([bytesFile(new Uint8Array([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7b]), 'x.safetensors')]);
    expect(broken.format).toBe('safetensors');
    expect(broken.errors[0]!.code).toBe('HeaderTooLarge');
  });

  test('MLX layers need config.json for per-module overrides; without it, shapes decide or the layer is refused', async () => {
    const dir = 'mlx/tiny-mixed';
    const files = [await fileOf(fixture(`${dir}/model.safetensors.index.json`)), await fileOf(fixture(`${dir}/model.safetensors`))];
    const withConfig = await inspectFiles([...files, await fileOf(fixture(`${dir}/config.json`))]);
    expect(withConfig.quantization?.error).toBeNull();
    expect(withConfig.quantization!.layers.every((l) => l.source === 'config')).toBe(true);
    const without = await inspectFiles(files);
    expect(without.valid).toBe(true);
    // Mixed bit widths cannot all be derived from shapes alone: either a refusal or other parameters.
    expect(without.quantization === null || without.quantization.error !== null || without.quantization.layers.some((l) => l.source !== 'config')).toBe(true);
    const bad = await inspectFiles([...files, bytesFile(new TextEncoder().encode('{"quantization": '), 'config.json')]);
    expect(bad.quantization?.error?.code).toBe('MlxInvalidConfig');
    expect(bad.valid).toBe(true);
  });

  test('distinct bytes: a range read twice counts once (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.nat(200), fc.nat(60)), { maxLength: 30 }), async (reads) => {
        const { ReadRanges } = await import('../src/inspect/files.ts');
        const r = new ReadRanges();
        const touched = new Set<number>();
        for (const [a, n] of reads) {
          r.add(a, a + n);
          for (let i = a; i < a + n; i++) touched.add(i);
        }
        expect(r.covered).toBe(touched.size);
        const iv = [...r.intervals()];
        for (let i = 1; i < iv.length; i++) expect(iv[i]![0]).toBeGreaterThan(iv[i - 1]![1]);
      }),
    );
  });

  test('random headers: never throws, and a valid verdict lists exactly the declared tensors', async () => {
    const dtype = fc.constantFrom('F32', 'F16', 'BF16', 'U8', 'I64', 'BOOL', 'F8_E4M3', 'X9');
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.string({ maxLength: 6 }), dtype, fc.array(fc.nat(4), { maxLength: 3 }), fc.nat(64), fc.nat(64)), { maxLength: 6 }),
        fc.nat(80),
        async (entries, dataLength) => {
          const header: Record<string, unknown> = {};
          for (const [name, d, shape, b, e] of entries) header[name] = { dtype: d, shape, data_offsets: [b, e] };
          const r = await inspectFiles([bytesFile(safetensors(header, dataLength), 'p.safetensors')]);
          if (r.valid) expect(r.tensors.map((t) => t.name).sort()).toEqual(Object.keys(header).filter((k) => k !== '__metadata__').sort());
          else expect(r.errors).toHaveLength(1);
        },
      ),
      { numRuns: 200 },
    );
  });
});
