#!/usr/bin/env node
// GGUF dequantize throughput per ggml type: @tensorport/gguf (built: run `npm run build` first)
// against gguf-py's numpy `gguf.quants.dequantize` (bench/gguf_numpy.py) on the same random
// blocks, in one run, checking that both give the same floats (NaN as NaN).
//
//   node bench/gguf.mjs [--elements 1048576] [--repeat 3] [--python python3]
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dist = new URL('../packages/gguf/dist/index.js', import.meta.url);
if (!existsSync(dist)) {
  console.error('bench: build first (npm run build)');
  process.exit(2);
}
const { DEQUANTIZABLE_TYPES, dequantizeBlocks, ggmlTypeByName } = await import(dist.href);

const here = dirname(fileURLToPath(import.meta.url));
const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const elements = Number(arg('elements', 1 << 20));
const repeat = Number(arg('repeat', 3));
const python = arg('python', process.env.TENSORPORT_PYTHON ?? 'python3');

const dir = mkdtempSync(join(tmpdir(), 'gguf-bench-'));
try {
  let s = 12345;
  const inputs = new Map();
  for (const name of DEQUANTIZABLE_TYPES) {
    const t = ggmlTypeByName(name);
    const bytes = new Uint8Array((elements / t.blockSize) * t.typeSize);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) >>> 24;
    inputs.set(name, bytes);
    writeFileSync(join(dir, `${name}.in`), bytes);
  }
  const ts = new Map();
  for (const name of DEQUANTIZABLE_TYPES) {
    const bytes = inputs.get(name);
    const out = new Float32Array(elements);
    dequantizeBlocks(name, bytes, out); // warm-up (JIT, tables)
    let best = Infinity;
    for (let r = 0; r < repeat; r++) {
      const t0 = process.hrtime.bigint();
      dequantizeBlocks(name, bytes, out);
      best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e9);
    }
    ts.set(name, { best, out });
  }
  const py = spawnSync(python, [join(here, 'gguf_numpy.py'), dir, DEQUANTIZABLE_TYPES.join(','), String(repeat)], { encoding: 'utf8', maxBuffer: 1 << 20 });
  if (py.status !== 0) throw new Error(`python failed: ${py.stderr}`);
  const pyTimes = JSON.parse(py.stdout);
  const ver = spawnSync(python, ['-c', 'import numpy, importlib.metadata as m; print(m.version("gguf"), numpy.__version__)'], { encoding: 'utf8' }).stdout.trim().split(' ');
  console.log(`dequantize ${elements} elements per type, best of ${repeat}; node ${process.version}, gguf-py ${ver[0]}, numpy ${ver[1]}; ${cpus().length} CPUs (${cpus()[0]?.model}), load ${loadavg()[0].toFixed(2)}`);
  console.log('| type | bpw | tensorport (M elem/s) | gguf-py numpy (M elem/s) | ratio | identical |');
  console.log('|---|---:|---:|---:|---:|:-:|');
  for (const name of DEQUANTIZABLE_TYPES) {
    const t = ggmlTypeByName(name);
    const { best, out } = ts.get(name);
    const want = new Uint32Array(readFileSync(join(dir, `${name}.py.out`)).buffer.slice(0));
    const got = new Uint32Array(out.buffer);
    let same = want.length === got.length;
    for (let i = 0; same && i < got.length; i++) {
      if (got[i] !== want[i] && !((got[i] & 0x7fffffff) > 0x7f800000 && (want[i] & 0x7fffffff) > 0x7f800000)) same = false;
    }
    const ours = elements / best / 1e6;
    const theirs = elements / pyTimes[name] / 1e6;
    console.log(`| ${name} | ${((t.typeSize * 8) / t.blockSize).toFixed(4).replace(/\.?0+$/, '')} | ${ours.toFixed(0)} | ${theirs.toFixed(0)} | ${(ours / theirs).toFixed(2)}× | ${same ? 'yes' : 'NO'} |`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
