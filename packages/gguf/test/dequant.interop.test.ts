import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import type { TensorDescriptor } from '@tensorport/core';
import { DEQUANTIZABLE_TYPES, dequantizeBlocks, dequantizedDescriptor, ggmlTypeByName } from '../src/index.ts';
import { bytesOf } from './helpers.ts';

const py = await requirePython(['gguf', 'numpy']);

// For every type gguf-py dequantizes: random block bytes (every bit pattern of every field, NaN
// and Inf scales included) and, where gguf-py can quantize, blocks made by its quantizer from
// N(0, 1) and tie-heavy k/16 data; each with gguf-py's dequantized float32 output.
const SCRIPT = `
import sys, os, numpy as np
from gguf import quants, GGMLQuantizationType as T, GGML_QUANT_SIZES
out = sys.argv[1]
rng = np.random.default_rng(17)
for name in sys.argv[2].split(','):
    qt = T[name]
    bs, ts = GGML_QUANT_SIZES[qt]
    n = 4096 // bs * 8 if bs > 1 else 8192
    raw = rng.integers(0, 256, size=(4, n * ts // 4), dtype=np.uint8)
    parts = [raw]
    try:
        x = np.concatenate([rng.standard_normal(n * bs).astype(np.float32), (rng.integers(-64, 64, n * bs) / 16).astype(np.float32)]).reshape(2, -1)
        q = quants.quantize(x, qt)
        parts.append(q.view(np.uint8).reshape(2, -1))
    except NotImplementedError:
        pass
    blocks = np.concatenate([p.reshape(-1) for p in parts]).reshape(1, -1)
    y = quants.dequantize(blocks if name not in ('F32', 'F16') else blocks.view({'F32': np.float32, 'F16': np.float16}[name]), qt)
    blocks.tofile(os.path.join(out, name + '.in'))
    y = np.asarray(y, dtype=np.float32)
    y.tofile(os.path.join(out, name + '.out'))
    # The narrow outputs as numpy and gguf-py make them from the float32 result.
    y.astype(np.float16).tofile(os.path.join(out, name + '.f16'))
    quants.quantize(y.reshape(1, -1), T.BF16).tofile(os.path.join(out, name + '.bf16'))
`;

describe.skipIf(!py)('dequantize matches gguf.quants.dequantize', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gguf-dq-'));
    await runPython(py!.exe, SCRIPT, { args: [dir, DEQUANTIZABLE_TYPES.join(',')] });
  }, 180_000);
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('lists the types gguf-py 0.19.0 dequantizes', () => {
    expect(py!.versions.gguf).toBe('0.19.0');
    expect(DEQUANTIZABLE_TYPES.length).toBe(26);
  });

  it.each(DEQUANTIZABLE_TYPES)('%s bit for bit (NaN as NaN)', async (name) => {
    const blocks = new Uint8Array(await readFile(join(dir, name + '.in')));
    const want = new Uint32Array(new Uint8Array(await readFile(join(dir, name + '.out'))).buffer);
    const t = ggmlTypeByName(name)!;
    const got = new Uint32Array(dequantizeBlocks(t, blocks).buffer);
    expect(got.length).toBe(want.length);
    let bad = 0;
    let first = -1;
    for (let i = 0; i < got.length; i++) {
      const g = got[i]!;
      const w = want[i]!;
      if (g === w) continue;
      const bothNaN = (g & 0x7fffffff) > 0x7f800000 && (w & 0x7fffffff) > 0x7f800000;
      if (bothNaN) continue;
      if (first < 0) first = i;
      bad++;
    }
    expect({ bad, first, got: first >= 0 ? got[first]!.toString(16) : '', want: first >= 0 ? want[first]!.toString(16) : '' }).toEqual({ bad: 0, first: -1, got: '', want: '' });
  });

  it.each(['Q4_K', 'Q8_0', 'IQ2_XS', 'TQ1_0'])('%s streamed to F16 and BF16 equals numpy astype(float16) and gguf-py BF16 of the float32 result', async (name) => {
    const blocks = new Uint8Array(await readFile(join(dir, name + '.in')));
    const t = ggmlTypeByName(name)!;
    const elements = (blocks.byteLength / t.typeSize) * t.blockSize;
    const src: TensorDescriptor & { ggmlType: typeof t; logicalShape: number[] } = {
      name, dtype: 'U8', shape: [blocks.byteLength], byteLength: blocks.byteLength, ggmlType: t, logicalShape: [elements],
      chunks: async function* () { for (let i = 0; i < blocks.byteLength; i += 1000) yield blocks.subarray(i, i + 1000); },
    };
    for (const [to, ext] of [['F16', '.f16'], ['BF16', '.bf16']] as const) {
      const got = new Uint16Array((await bytesOf(dequantizedDescriptor(src, to), 4096)).buffer);
      const want = new Uint16Array(new Uint8Array(await readFile(join(dir, name + ext))).buffer);
      expect(got.length).toBe(want.length);
      const nan = (h: number) => (to === 'F16' ? (h & 0x7fff) > 0x7c00 : (h & 0x7fff) > 0x7f80);
      let bad = 0;
      for (let i = 0; i < got.length; i++) if (got[i] !== want[i] && !(nan(got[i]!) && nan(want[i]!))) bad++;
      expect(bad, to).toBe(0);
    }
  });
});
