#!/usr/bin/env node
// Rewrites a large safetensors file with `tensorport convert` and compares it with `cp` of the same
// file and with the Python reference (safetensors load_file + save_file), in one run.
// Usage: node bench/safetensors-rewrite.mjs [--gib 2] [--dir DIR] [--runs 3] [--keep]
import { mkdirSync, openSync, rmSync, statSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CLI, ROOT, contest, findPython, measure, requireBuild } from './lib.mjs';

const { values } = parseArgs({
  options: { gib: { type: 'string', default: '2' }, dir: { type: 'string', default: join(ROOT, 'bench/out') }, runs: { type: 'string', default: '3' }, keep: { type: 'boolean', default: false } },
});
requireBuild();
const gib = Number(values.gib);
const runs = Number(values.runs);
mkdirSync(values.dir, { recursive: true });
const input = join(values.dir, `rewrite-${gib}gib.safetensors`);

// 64 MiB F32 tensors with varied contents; the header is written by hand (format: 8-byte LE
// length, JSON, space padding to 8) so the bench does not depend on the code it measures.
function makeInput() {
  const tensorBytes = 64 * 1024 * 1024;
  const count = Math.max(1, Math.round((gib * 1024 ** 3) / tensorBytes));
  const entries = [];
  for (let i = 0; i < count; i++) {
    const name = `model.layers.${i}.mlp.weight`;
    entries.push(`"${name}":{"dtype":"F32","shape":[4096,${tensorBytes / 4 / 4096}],"data_offsets":[${i * tensorBytes},${(i + 1) * tensorBytes}]}`);
  }
  let json = `{"__metadata__":{"format":"pt"},${entries.join(',')}}`;
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const head = Buffer.alloc(8);
  head.writeBigUInt64LE(BigInt(json.length));
  const fd = openSync(input, 'w');
  writeSync(fd, head);
  writeSync(fd, json);
  const chunk = new Float32Array(tensorBytes / 4);
  for (let i = 0; i < count; i++) {
    for (let j = 0; j < chunk.length; j++) chunk[j] = Math.sin(i * 7919 + j) * 0.02;
    writeSync(fd, new Uint8Array(chunk.buffer));
  }
  closeSync(fd);
}

console.log(`bench: safetensors rewrite, ${gib} GiB input in ${values.dir}`);
makeInput();
const size = statSync(input).size;
const out = join(values.dir, 'rewrite-out.safetensors');
const c = contest({ input, out, runs });
const cp = c.run('cp', 'cp', [input, out]);
c.run('cp && sync (durable, like our default)', 'sh', ['-c', 'cp "$1" "$2" && sync "$2"', 'sh', input, out]);
c.run('tensorport convert (default: fsync)', process.execPath, [CLI, 'convert', input, out, '--force']);
c.run('tensorport convert --no-fsync', process.execPath, [CLI, 'convert', input, out, '--force', '--no-fsync']);
const py = findPython(['safetensors', 'numpy']);
if (py) {
  c.run('python safetensors load_file+save_file', py, ['-c', 'import sys; from safetensors.numpy import load_file, save_file; d = load_file(sys.argv[1]); save_file(d, sys.argv[2], metadata={"format": "pt"})', input, out]);
} else {
  console.log('(python with safetensors+numpy not found: reference row skipped)');
}
c.print(size, cp);
if (!values.keep) rmSync(input, { force: true });
