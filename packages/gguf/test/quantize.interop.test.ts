import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { QUANTIZABLE_TYPES, quantizeBlocks } from '../src/index.ts';

const py = await requirePython(['gguf', 'numpy']);

// Inputs meant to hit every rounding rule: N(0,1) and N(0,0.05), tie-heavy k/16 and k/10 values,
// ternary values, constant and all-zero blocks, subnormals and values near the f16 limits.
const SCRIPT = `
import sys, os, numpy as np
from gguf import quants, GGMLQuantizationType as T
out = sys.argv[1]
rng = np.random.default_rng(3)
n = 256 * 64
x = np.concatenate([
    rng.standard_normal(n), rng.standard_normal(n) * 0.05,
    rng.integers(-128, 128, n) / 16, rng.integers(-100, 100, n) / 10,
    rng.integers(-1, 2, n) * 0.5, np.full(256, 3.0), np.zeros(256),
    rng.standard_normal(256) * 1e-40, rng.standard_normal(256) * 60000,
]).astype(np.float32).reshape(1, -1)
x.tofile(os.path.join(out, 'x.f32'))
for name in sys.argv[2].split(','):
    q = quants.quantize(x, T[name])
    np.ascontiguousarray(q).view(np.uint8).tofile(os.path.join(out, name + '.q'))
`;

describe.skipIf(!py)('quantize matches gguf.quants.quantize', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gguf-q-'));
    await runPython(py!.exe, SCRIPT, { args: [dir, QUANTIZABLE_TYPES.join(',')] });
  }, 180_000);
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('covers the types gguf-py 0.19.0 quantizes', () => {
    expect([...QUANTIZABLE_TYPES].sort()).toEqual(['BF16', 'F16', 'F32', 'MXFP4', 'Q4_0', 'Q4_1', 'Q5_0', 'Q5_1', 'Q8_0', 'TQ1_0', 'TQ2_0']);
  });

  it.each(QUANTIZABLE_TYPES)('%s byte for byte', async (name) => {
    const x = new Float32Array(new Uint8Array(await readFile(join(dir, 'x.f32'))).buffer);
    const want = new Uint8Array(await readFile(join(dir, name + '.q')));
    const got = quantizeBlocks(name, x);
    expect(got.byteLength).toBe(want.byteLength);
    let bad = 0;
    let first = -1;
    for (let i = 0; i < got.byteLength; i++) {
      if (got[i] !== want[i]) {
        if (first < 0) first = i;
        bad++;
      }
    }
    expect({ bad, first }).toEqual({ bad: 0, first: -1 });
  });
});
