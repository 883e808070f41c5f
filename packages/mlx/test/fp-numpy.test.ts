/**
 * The fp-mode quantizers and dequantizers checked byte for byte against a second transcription of
 * MLX's kernels in numpy (test/helpers/mlx_fp_ref.py), for every mode × dtype × variant, on groups
 * built to hit the places where the kernels differ: exact ties, zeros and −0, small negatives,
 * denormal groups, saturating groups, and (nvfp4) a global scale.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { requirePython, runPythonBytes } from '../../core/test/helpers/python.ts';
import { bytesOfWords, dequantizeFp, encodeFloats, fpDequantizedDtype, quantizeFp, type FloatDType, type FpMode } from '../src/index.ts';
import { castRef } from './helpers/reference.ts';
import { normal, rng } from './helpers/random.ts';

const py = await requirePython(['numpy', 'ml_dtypes']);
const helper = fileURLToPath(new URL('./helpers/mlx_fp_ref.py', import.meta.url));

const COLS = 128;
const TIES = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5];

/** Smallest exponent whose power of two the dtype holds (subnormals included). */
const TINY: Record<FloatDType, number> = { F32: -149, BF16: -133, F16: -24 };

function weights(mode: FpMode, dtype: FloatDType, seed: number): number[] {
  const r = rng(seed);
  const maxval = mode === 'mxfp8' ? 448 : 6;
  const w: number[] = [];
  for (let row = 0; row < 12; row++) {
    for (let c = 0; c < COLS; c++) {
      const kind = (row * 4 + Math.floor(c / 32)) % 12;
      const k = (row % 5) - 2;
      let v: number;
      switch (kind) {
        case 0: // ordinary
          v = normal(r) * 2 ** (Math.floor(r() * 12) - 6);
          break;
        case 1: // scale exactly 2^k, elements on the E2M1 tie points
          v = c % 16 === 0 ? maxval * 2 ** k : (r() < 0.5 ? -1 : 1) * TIES[c % 7]! * 2 ** k * (mode === 'mxfp8' ? 1 + 1 / 16 : 1);
          break;
        case 2: // zeros and negative zeros
          v = c % 3 === 0 ? -0 : 0;
          break;
        case 3: // denormal group: the smallest values the dtype holds
          v = (r() < 0.5 ? -1 : 1) * 2 ** (TINY[dtype] + Math.floor(r() * 6));
          break;
        case 4: // saturating: amax / maxval just under 2^(k + 1/2), so the exponent rounds down
          v = c % 16 === 1 ? -maxval * 1.41 * 2 ** k : normal(r) * maxval * 2 ** k;
          break;
        case 5: // one large value, the rest small negatives that round to (signed) zero
          v = c % 16 === 0 ? maxval : -0.01 * (1 + r());
          break;
        case 6: // large magnitudes: nvfp4 scales past 448 saturate
          v = Math.max(-6e4, Math.min(6e4, normal(r) * 1e4)) * (dtype === 'F16' ? 1 : 100);
          break;
        case 7: // a dtype-rounding-sensitive range: values near the E2M1 midpoints after scaling
          v = (TIES[c % 7]! + (r() - 0.5) * 2 ** -6) * 2 ** k;
          break;
        default:
          v = (r() - 0.5) * 2 ** (Math.floor(r() * 30) - 20);
      }
      w.push(castRef(dtype, v));
    }
  }
  return w;
}

interface Case {
  mode: FpMode;
  dtype: FloatDType;
  variant: 'gpu' | 'cpu';
  count: number;
  globalScale?: number;
}

describe.skipIf(!py)('fp modes against the numpy transcription', () => {
  it('quantize and dequantize agree byte for byte: every mode × dtype × variant (nvfp4 also with global scales)', async () => {
    const cases: Case[] = [];
    const inputs: number[][] = [];
    let seed = 7;
    for (const mode of ['mxfp4', 'mxfp8', 'nvfp4'] as FpMode[]) {
      for (const dtype of ['F32', 'F16', 'BF16'] as FloatDType[]) {
        for (const variant of ['gpu', 'cpu'] as const) {
          for (const globalScale of mode === 'nvfp4' ? [undefined, 3.7, 1000] : [undefined]) {
            const w = weights(mode, dtype, seed++);
            cases.push({ mode, dtype, variant, count: w.length, ...(globalScale === undefined ? {} : { globalScale }) });
            inputs.push(w);
          }
        }
      }
    }
    const head = new TextEncoder().encode(JSON.stringify(cases));
    const parts = [new Uint8Array(new Uint32Array([head.byteLength]).buffer), head, ...inputs.map((w, i) => encodeFloats(w, cases[i]!.dtype))];
    const input = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
    let o = 0;
    for (const p of parts) {
      input.set(p, o);
      o += p.byteLength;
    }
    const out = new Uint8Array(await runPythonBytes(py!.exe, `import runpy, sys; sys.argv = [sys.argv[1]]; runpy.run_path(sys.argv[0], run_name='__main__')`, { input, args: [helper] }));
    let pos = 0;
    const differences: string[] = [];
    cases.forEach((c, i) => {
      const g = c.globalScale === undefined ? {} : { globalScale: c.globalScale };
      const q = quantizeFp(inputs[i]!, COLS, { mode: c.mode, dtype: c.dtype, variant: c.variant, ...g });
      const dopts = { mode: c.mode, dtype: c.dtype, variant: c.variant, ...g };
      const back = encodeFloats(dequantizeFp(q.words, q.scales, dopts), fpDequantizedDtype(dopts));
      const mine = { words: bytesOfWords(q.words), scales: q.scales, values: back };
      for (const [k, part] of Object.entries(mine)) {
        const theirs = out.subarray(pos, pos + part.byteLength);
        pos += part.byteLength;
        if (!Buffer.from(part).equals(Buffer.from(theirs))) {
          const at = part.findIndex((b, j) => b !== theirs[j]);
          differences.push(`${c.mode} ${c.dtype} ${c.variant}${c.globalScale ? ` g=${c.globalScale}` : ''} ${k}: first differing byte ${at} (${part[at]} vs ${theirs[at]})`);
        }
      }
    });
    expect(differences).toEqual([]);
    expect(pos).toBe(out.byteLength);
  });
});
