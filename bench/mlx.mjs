#!/usr/bin/env node
// MLX affine quantize / dequantize throughput: @tensorport/mlx (built: run `npm run build` first)
// against a vectorised numpy implementation of the same kernels (mlx_numpy.py, next to this
// file), on the same weights, checking that both produce identical bytes.
//
// Both sides are timed over the same work: from the weight's bytes (BF16/F16) to the stored bytes
// (packed codes, scales and biases in the weight's dtype), and from those back to weight bytes.
// The TypeScript side runs as the pipeline does (packages/mlx/src/rows.ts): one block of rows of
// about 4 MiB of f32 at a time, the f32 values in one buffer reused from block to block (as
// blockScratch there); numpy runs on the whole matrix, its natural way. The two sides run
// interleaved (TS, numpy, TS, numpy, ...); best of --repeat, in wall seconds and in CPU seconds
// (the process's own; on a loaded shared machine the fairer of the two).
//
//   node bench/mlx.mjs [--rows 4096] [--cols 4096] [--repeat 3] [--case 8b] [--python python3] [--json]
// (--case keeps the cases whose name, e.g. `8b g32 F16 cpu`, contains the text.)
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { PACKAGES } from './lib.mjs';

const dist = join(PACKAGES, 'mlx/dist/index.js');
if (!existsSync(dist)) {
  console.error('bench: build first (npm run build)');
  process.exit(2);
}
const { bytesOfWords, decodeFloats, dequantizeAffine, encodeFloats, quantizeAffine, wordsOf } = await import(pathToFileURL(dist).href);

const here = dirname(fileURLToPath(import.meta.url));
const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const json = process.argv.includes('--json');
const rows = Number(arg('rows', 4096));
const cols = Number(arg('cols', 4096));
const repeat = Number(arg('repeat', 3));
const python = arg('python', process.env.TENSORPORT_PYTHON ?? 'python3');
const only = arg('case', '');
const caseName = (c) => `${c.bits}b g${c.groupSize} ${c.dtype} ${c.variant}`;
const CASES = [
  { bits: 4, groupSize: 64, dtype: 'BF16', variant: 'gpu' },
  { bits: 3, groupSize: 64, dtype: 'BF16', variant: 'gpu' },
  { bits: 8, groupSize: 32, dtype: 'F16', variant: 'cpu' },
].filter((c) => caseName(c).includes(only));
/** Rows per block, as packages/mlx/src/rows.ts (BLOCK_BYTES of f32 values). */
const block = Math.max(1, Math.min(rows, Math.floor((4 * 1024 * 1024) / (cols * 4))));

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

/** One timed call: wall and CPU seconds (user + system of this process). */
function timed(fn) {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const out = fn();
  const c = process.cpuUsage(c0);
  return { seconds: (performance.now() - t0) / 1000, cpu: (c.user + c.system) / 1e6, out };
}

const concat = (parts) => Buffer.concat(parts.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength)));

/** Quantizes block by block; returns the three stored tensors' bytes, block by block (as the pipeline writes them). */
function quantizeBlocks(raw, c) {
  const eb = c.dtype === 'F32' ? 4 : 2;
  const words = [];
  const scales = [];
  const biases = [];
  const scratch = new Float32Array(block * cols);
  for (let r = 0; r < rows; r += block) {
    const n = Math.min(block, rows - r) * cols;
    const q = quantizeAffine(decodeFloats(raw.subarray(r * cols * eb, r * cols * eb + n * eb), c.dtype, scratch.subarray(0, n)), cols, c);
    words.push(bytesOfWords(q.words));
    scales.push(encodeFloats(q.scales, c.dtype));
    biases.push(encodeFloats(q.biases, c.dtype));
  }
  return { words, scales, biases };
}

function dequantizeBlocks(q, c) {
  const eb = c.dtype === 'F32' ? 4 : 2;
  const out = [];
  const wordsPerRow = (cols * c.bits) / 32;
  const groupsPerRow = cols / c.groupSize;
  const scratch = new Float32Array(block * cols);
  for (let r = 0; r < rows; r += block) {
    const n = Math.min(block, rows - r);
    const w = wordsOf(q.words.subarray(r * wordsPerRow * 4, (r + n) * wordsPerRow * 4));
    const s = decodeFloats(q.scales.subarray(r * groupsPerRow * eb, (r + n) * groupsPerRow * eb), c.dtype);
    const b = decodeFloats(q.biases.subarray(r * groupsPerRow * eb, (r + n) * groupsPerRow * eb), c.dtype);
    out.push(encodeFloats(dequantizeAffine(w, s, b, { ...c }, scratch.subarray(0, n * cols)), c.dtype));
  }
  return out;
}

const n = rows * cols;
const results = [];
if (!json) {
  console.log(`MLX affine, ${rows}×${cols} = ${n} elements, best of ${repeat}, TS in blocks of ${block} rows; Node ${process.version}; ${cpus().length} cores, load average ${loadavg()[0].toFixed(1)}`);
  console.log('M elements per second of wall time (per CPU second in brackets)');
  console.log('| case | TS quantize | numpy quantize | ratio | TS dequantize | numpy dequantize | ratio | identical |\n|---|---:|---:|---:|---:|---:|---:|---|');
}
for (const c of CASES) {
  const raw = weights(n, c.dtype);
  const head = JSON.stringify({ dtype: c.dtype, bits: c.bits, group_size: c.groupSize, variant: c.variant, repeat: 1 }) + '\n';
  const row = { case: caseName(c), elements: n, tsQuantize: Infinity, tsDequantize: Infinity, tsQuantizeCpu: Infinity, tsDequantizeCpu: Infinity, npQuantize: Infinity, npDequantize: Infinity, npQuantizeCpu: Infinity, npDequantizeCpu: Infinity, identical: true };
  for (let r = 0; r < repeat; r++) {
    const q = timed(() => quantizeBlocks(raw, c));
    // The stored tensors as files hold them (one buffer each), outside the timed part on both sides.
    const stored = { words: concat(q.out.words), scales: concat(q.out.scales), biases: concat(q.out.biases) };
    const d = timed(() => dequantizeBlocks(stored, c));
    row.tsQuantize = Math.min(row.tsQuantize, q.seconds);
    row.tsQuantizeCpu = Math.min(row.tsQuantizeCpu, q.cpu);
    row.tsDequantize = Math.min(row.tsDequantize, d.seconds);
    row.tsDequantizeCpu = Math.min(row.tsDequantizeCpu, d.cpu);
    const py = spawnSync(python, [join(here, 'mlx_numpy.py')], { input: Buffer.concat([Buffer.from(head), raw]), maxBuffer: 1 << 30 });
    if (py.status !== 0) {
      row.error = `numpy failed: ${py.stderr?.toString().trim().split('\n').pop()}`;
      row.identical = false;
      break;
    }
    const out = py.stdout;
    const nl = out.indexOf(10);
    const info = JSON.parse(out.subarray(0, nl).toString());
    row.npQuantize = Math.min(row.npQuantize, info.quantize_seconds);
    row.npQuantizeCpu = Math.min(row.npQuantizeCpu, info.quantize_cpu_seconds);
    row.npDequantize = Math.min(row.npDequantize, info.dequantize_seconds);
    row.npDequantizeCpu = Math.min(row.npDequantizeCpu, info.dequantize_cpu_seconds);
    const mine = Buffer.concat([stored.words, stored.scales, stored.biases, concat(d.out)]);
    if (Buffer.compare(mine, out.subarray(nl + 1)) !== 0) row.identical = false;
  }
  results.push(row);
  if (!json) {
    const same = row.error ?? (row.identical ? 'yes' : 'NO');
    const rate = (s, cpu) => `${(n / s / 1e6).toFixed(1)} (${(n / cpu / 1e6).toFixed(1)})`;
    const ratio = (a, b, ac, bc) => `${(b / a).toFixed(2)}× (${(bc / ac).toFixed(2)}×)`;
    console.log(`| ${row.case} | ${rate(row.tsQuantize, row.tsQuantizeCpu)} | ${rate(row.npQuantize, row.npQuantizeCpu)} | ${ratio(row.tsQuantize, row.npQuantize, row.tsQuantizeCpu, row.npQuantizeCpu)} | ${rate(row.tsDequantize, row.tsDequantizeCpu)} | ${rate(row.npDequantize, row.npDequantizeCpu)} | ${ratio(row.tsDequantize, row.npDequantize, row.tsDequantizeCpu, row.npDequantizeCpu)} | ${same} |`);
  }
}
if (json) console.log(JSON.stringify(results));
