import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { basename, join } from 'node:path';
import { FolderContext, MemoryFolder } from '@tensorport/core';
import { scan } from '../src/pipeline/scan.ts';

const FIXTURES = join(import.meta.dirname, '../../../fixtures');
const pick = (dir: string, re: RegExp): string[] => readdirSync(join(FIXTURES, dir)).filter((f) => re.test(f)).slice(0, 3).map((f) => join(FIXTURES, dir, f));

/**
 * Issue 11 item 7, through the library: the scan names a file with no pickle by the identify
 * assembled from every format package, so GGUF (the gguf package's kind) is `no-pickle` too.
 */
describe('scan: files with no pickle, named by every package', () => {
  it('safetensors, GGUF, HDF5 and ONNX files: no-pickle, with their kind', async () => {
    const files = [...pick('safetensors', /\.safetensors$/), ...pick('gguf', /\.gguf$/), ...pick('identify', /\.(h5|onnx|safetensors|bin)$/)];
    expect(files.length).toBeGreaterThanOrEqual(8);
    const kinds = new Set<string>();
    for (const f of files) {
      const r = await scan(new FolderContext(new MemoryFolder([[basename(f), new Uint8Array(readFileSync(f))]]), basename(f)));
      expect(r.verdict, `${f}: ${r.findings.map((x) => x.message).join('; ')}`).toBe('no-pickle');
      if (r.kind) kinds.add(r.kind);
    }
    expect([...kinds]).toEqual(expect.arrayContaining(['safetensors', 'gguf', 'hdf5']));
  });
});
