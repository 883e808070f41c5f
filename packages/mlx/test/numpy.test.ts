/**
 * Cross-check against a second, vectorised implementation in numpy (the repo's bench/mlx_numpy.py), written
 * separately from the kernel text: quantize (both variants) and dequantize, bit for bit.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { requirePython, runPythonBytes } from '../../core/test/helpers/python.ts';
import { dequantizeAffine, encodeFloats, quantizeAffine, bytesOfWords, type FloatDType } from '../src/index.ts';
import { castRef } from './helpers/reference.ts';
import { normal, rng } from './helpers/random.ts';

const py = await requirePython(['numpy']);
const benchDir = fileURLToPath(new URL('../../../bench/', import.meta.url));

const DRIVER = `
import sys, json
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])
import numpy as np
from mlx_numpy import to_f32, from_f32, quantize, dequantize
data = sys.stdin.buffer.read()
n = int.from_bytes(data[:4], 'little')
cases = json.loads(data[4:4 + n])
pos = 4 + n
out = []
for c in cases:
    size = c['count'] * (4 if c['dtype'] == 'F32' else 2)
    w = to_f32(data[pos:pos + size], c['dtype']); pos += size
    words, scales, biases = quantize(w, c['gs'], c['bits'], c['variant'], c['dtype'])
    back = dequantize(words, scales, biases, c['gs'], c['bits'], c['dtype'])
    out.append(words.astype('<u4').tobytes() + from_f32(scales, c['dtype']) + from_f32(biases, c['dtype']) + from_f32(back, c['dtype']))
sys.stdout.buffer.write(b''.join(out))
`;

describe.skipIf(!py)('numpy cross-check', () => {
  for (const dtype of ['F32', 'F16', 'BF16'] as FloatDType[]) {
    it(`${dtype}: quantize and dequantize agree with numpy byte for byte (all bits × group sizes × variants)`, async () => {
      const cases: { dtype: FloatDType; bits: number; gs: number; variant: 'gpu' | 'cpu'; count: number }[] = [];
      const weights: number[][] = [];
      let seed = 100;
      for (const bits of [2, 3, 4, 5, 6, 8]) {
        for (const gs of [32, 64, 128]) {
          for (const variant of ['gpu', 'cpu'] as const) {
            const r = rng(seed++);
            // Mixed content: normal values, ties on a 1/16 grid, an all-negative and an all-zero group.
            const w = Array.from({ length: 4 * 256 }, (_, i) => {
              const g = Math.floor(i / gs) % 4;
              const v = g === 0 ? normal(r) * 0.03 : g === 1 ? Math.floor(r() * 33 - 16) / 16 : g === 2 ? -1 - r() : 0;
              return castRef(dtype, v);
            });
            cases.push({ dtype, bits, gs, variant, count: w.length });
            weights.push(w);
          }
        }
      }
      const head = new TextEncoder().encode(JSON.stringify(cases));
      const parts = [new Uint8Array(new Uint32Array([head.byteLength]).buffer), head, ...weights.map((w) => encodeFloats(w, dtype))];
      const input = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
      let o = 0;
      for (const p of parts) {
        input.set(p, o);
        o += p.byteLength;
      }
      const out = new Uint8Array(await runPythonBytes(py!.exe, DRIVER, { input, args: [benchDir] }));
      let pos = 0;
      cases.forEach((c, i) => {
        const q = quantizeAffine(weights[i]!, 256, { bits: c.bits, groupSize: c.gs, variant: c.variant, dtype });
        const back = dequantizeAffine(q.words, q.scales, q.biases, { bits: c.bits, groupSize: c.gs, dtype });
        const mine = [bytesOfWords(q.words), encodeFloats(q.scales, dtype), encodeFloats(q.biases, dtype), encodeFloats(back, dtype)];
        for (const [k, part] of mine.entries()) {
          const theirs = out.subarray(pos, pos + part.byteLength);
          pos += part.byteLength;
          expect(Buffer.from(part).equals(Buffer.from(theirs)), `${dtype} ${c.bits}b gs${c.gs} ${c.variant} part ${k}`).toBe(true);
        }
      });
      expect(pos).toBe(out.byteLength);
    });
  }
});
