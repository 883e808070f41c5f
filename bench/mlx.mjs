#!/usr/bin/env node
// MLX affine quantize / dequantize throughput: @tensorport/mlx (built: run `npm run build` first)
// against a vectorised numpy implementation of the same kernels (mlx_numpy.py, next to this
// file), on the same weights, checking that both produce identical bytes.
//
//   node bench/mlx.mjs [--rows 4096] [--cols 4096] [--repeat 3] [--python python3]
import { spawnSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { existsSync } from 'node:fs';

const dist = new URL('../packages/mlx/dist/index.js', import.meta.url);
if (!existsSync(dist)) {
  console.error('bench: build first (npm run build)');
  process.exit(2);
}
const { bytesOfWords, decodeFloats, dequantizeAffine, encodeFloats, quantizeAffine, wordsOf } = await import(dist.href);

const here = dirname(fileURLToPath(import.meta.url));
const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const rows = Number(arg('rows', 4096));
const cols = Number(arg('cols', 4096));
const repeat = Number(arg('repeat', 3));
const python = arg('python', process.env.TENSORPORT_PYTHON ?? 'python3');
const CASES = [
  { bits: 4, groupSize: 64, dtype: 'BF16', variant: 'gpu' },
  { bits: 3, groupSize: 64, dtype: 'BF16', variant: 'gpu' },
  { bits: 8, groupSize: 32, dtype: 'F16', variant: 'cpu' },
];

function weights(n, dtype) {
  let s = 12345;
  const v = new Float32Array(n);
  for (let i = 0; i < n; i += 2) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    const u1 = (s + 1) / 4294967297;
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    const u2 = s / 4294967296;
    const r = Math.sqrt(-2 * Math.log(u1)) * 0.02;
    v[i] = r * Math.cos(2 * Math.PI * u2);
    if (i + 1 < n) v[i + 1] = r * Math.sin(2 * Math.PI * u2);
  }
  return encodeFloats(v, dtype);
}

function best(fn) {
  let t = Infinity;
  let out;
  for (let i = 0; i < repeat; i++) {
    const t0 = performance.now();
    out = fn();
    t = Math.min(t, (performance.now() - t0) / 1000);
  }
  return { seconds: t, out };
}

const n = rows * cols;
const fmt = (x) => (x / 1e6).toFixed(1).padStart(8);
console.log(`MLX affine, ${rows}×${cols} = ${n.toLocaleString('en-US')} elements, best of ${repeat}; Node ${process.version}; ${cpus().length} cores, load average ${loadavg()[0].toFixed(1)}`);
console.log('case                 | TS quantize | numpy quantize | TS dequantize | numpy dequantize | identical');
console.log('                     |  (M elem/s) |   (M elem/s)   |  (M elem/s)   |   (M elem/s)     |');
for (const c of CASES) {
  const raw = weights(n, c.dtype);
  const q = best(() => {
    const r = quantizeAffine(decodeFloats(raw, c.dtype), cols, c);
    return { words: bytesOfWords(r.words), scales: encodeFloats(r.scales, c.dtype), biases: encodeFloats(r.biases, c.dtype) };
  });
  const d = best(() => {
    const w = wordsOf(q.out.words);
    const vals = dequantizeAffine(w, decodeFloats(q.out.scales, c.dtype), decodeFloats(q.out.biases, c.dtype), { ...c });
    return encodeFloats(vals, c.dtype);
  });
  const head = JSON.stringify({ dtype: c.dtype, bits: c.bits, group_size: c.groupSize, variant: c.variant, repeat }) + '\n';
  const py = spawnSync(python, [join(here, 'mlx_numpy.py')], { input: Buffer.concat([Buffer.from(head), raw]), maxBuffer: 1 << 30 });
  let npq = '     n/a', npd = '     n/a', same = 'numpy unavailable';
  if (py.status === 0) {
    const out = py.stdout;
    const nl = out.indexOf(10);
    const info = JSON.parse(out.subarray(0, nl).toString());
    const blob = out.subarray(nl + 1);
    const mine = Buffer.concat([q.out.words, q.out.scales, q.out.biases, d.out]);
    npq = fmt(n / info.quantize_seconds);
    npd = fmt(n / info.dequantize_seconds);
    same = Buffer.compare(mine, blob) === 0 ? 'yes' : 'NO';
  } else {
    same = `numpy failed: ${py.stderr?.toString().trim().split('\n').pop()}`;
  }
  const name = `${c.bits}b g${c.groupSize} ${c.dtype} ${c.variant}`.padEnd(20);
  console.log(`${name} | ${fmt(n / q.seconds)}    | ${npq}       | ${fmt(n / d.seconds)}      | ${npd}         | ${same}`);
}
