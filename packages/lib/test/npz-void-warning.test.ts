import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { convertPath } from '../src/node/index.ts';

/**
 * Issue 11 papercut: a BF16 or float8 .npz output gave no warning that numpy reads those arrays
 * back as void. Inputs are the safetensors package's own files (fixtures/safetensors).
 */
const REPO = join(import.meta.dirname, '../../..');
const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));
const py = await requirePython(['numpy']);

describe('npz output of dtypes numpy has no type for', () => {
  it('BF16 and F8_E4M3 arrays: one warning each naming the void descr; numpy indeed loads them as void', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tp-npz-void-'));
    dirs.push(dir);
    const out: Record<string, string> = {};
    for (const d of ['BF16', 'F8_E4M3', 'F32']) {
      out[d] = join(dir, `${d}.npz`);
      const r = await convertPath({ input: join(REPO, `fixtures/safetensors/dtype_${d}.safetensors`), output: out[d]!, fsync: false });
      const codes = r.warnings.map((w) => w.code);
      if (d === 'F32') expect(codes).toEqual([]);
      else {
        expect(codes).toEqual([d === 'BF16' ? 'NpyWroteV2' : 'NpyWroteV1']);
        expect(r.warnings[0]!.message).toMatch(/numpy reads it back as void/);
      }
    }
    if (!py) return;
    const kinds = await runPython(py.exe, 'import sys, numpy as np\nprint(" ".join(np.load(p)["x"].dtype.str for p in sys.argv[1:]))', { args: [out.BF16!, out.F8_E4M3!, out.F32!] });
    expect(kinds.trim()).toBe('|V2 |V1 <f4');
  });
});
