#!/usr/bin/env node
// MLX fp-mode (mxfp4, mxfp8, nvfp4) quantize / dequantize throughput of @tensorport/mlx (built:
// run `npm run build` first), per mode × kernel variant, on BF16 weights. The bytes themselves are
// checked against the numpy transcription by packages/mlx/test/fp-numpy.test.ts.
//
//   node bench/mlx-fp.mjs [--rows 2048] [--cols 2048] [--repeat 3]
import { existsSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';

const dist = new URL('../packages/mlx/dist/index.js', import.meta.url);
if (!existsSync(dist)) {
  console.error('bench: build first (npm run build)');
  process.exit(2);
}
const { decodeFloats, dequantizeFp, encodeFloats, quantizeFp } = await import(dist.href);
const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const rows = arg('rows', 2048);
const cols = arg('cols', 2048);
const repeat = arg('repeat', 3);
const n = rows * cols;
const raw = new Float32Array(n);
let s = 7;
for (let i = 0; i < n; i++) {
  s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
  raw[i] = ((s / 2 ** 32) - 0.5) * 0.05 * (i % 101 === 0 ? 10 : 1);
}
const w = decodeFloats(encodeFloats(raw, 'BF16'), 'BF16');

function best(fn) {
  let t = Infinity;
  let out;
  for (let r = 0; r < repeat; r++) {
    const t0 = performance.now();
    out = fn();
    t = Math.min(t, performance.now() - t0);
  }
  return { ms: t, out };
}

console.log(`# ${rows}×${cols} BF16 weights (${(n / 1e6).toFixed(1)} M), best of ${repeat}; ${cpus().length} CPUs, load ${loadavg()[0].toFixed(2)}`);
console.log('| mode | variant | quantize M weights/s | dequantize M weights/s |');
console.log('|---|---|---|---|');
for (const mode of ['mxfp4', 'mxfp8', 'nvfp4']) {
  for (const variant of ['gpu', 'cpu']) {
    const q = best(() => quantizeFp(w, cols, { mode, variant, dtype: 'BF16' }));
    const d = best(() => dequantizeFp(q.out.words, q.out.scales, { mode, variant, dtype: 'BF16' }));
    console.log(`| ${mode} | ${variant} | ${(n / 1e3 / q.ms).toFixed(1)} | ${(n / 1e3 / d.ms).toFixed(1)} |`);
  }
}
