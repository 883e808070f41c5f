#!/usr/bin/env node
// Rewrites a large safetensors file with `tensorport convert` and compares it with `cp` of the same
// file and with the Python reference (safetensors load_file + save_file), in one run.
// Usage: node bench/safetensors-rewrite.mjs [--gib 2] [--dir DIR] [--runs 3] [--keep]
import { mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CLI, ROOT, contest, findPython, requireBuild, writeSyntheticSafetensors } from './lib.mjs';

const { values } = parseArgs({
  options: { gib: { type: 'string', default: '2' }, dir: { type: 'string', default: join(ROOT, 'bench/out') }, runs: { type: 'string', default: '3' }, keep: { type: 'boolean', default: false } },
});
requireBuild();
const gib = Number(values.gib);
const runs = Number(values.runs);
mkdirSync(values.dir, { recursive: true });
const input = join(values.dir, `rewrite-${gib}gib.safetensors`);

console.log(`bench: safetensors rewrite, ${gib} GiB input in ${values.dir}`);
writeSyntheticSafetensors(input, gib, { name: (i) => `model.layers.${i}.mlp.weight`, metadata: '{"format":"pt"}' });
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
