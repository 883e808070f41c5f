#!/usr/bin/env node
// Inspects and validates a 100 GB sparse safetensors file: only the header should be read.
// Usage: node bench/inspect-sparse.mjs [--gb 100] [--dir DIR]
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CLI, ROOT, measure, median, requireBuild, writeSparseSafetensors } from './lib.mjs';

const { values } = parseArgs({ options: { gb: { type: 'string', default: '100' }, dir: { type: 'string', default: join(ROOT, 'bench/out') } } });
requireBuild();
mkdirSync(values.dir, { recursive: true });
const file = join(values.dir, 'sparse.safetensors');
const { size, count, headerBytes } = writeSparseSafetensors(file, Number(values.gb));
console.log(`bench: ${(size / 1e9).toFixed(1)} GB sparse file, ${count} tensors, header ${headerBytes} bytes`);
console.log('| command | wall time (s, median of 5, includes node start-up) | peak RSS (MiB) |\n|---|---|---|');
for (const cmd of ['inspect', 'validate']) {
  const res = Array.from({ length: 5 }, () => measure(process.execPath, [CLI, cmd, file, '--json'], { maxBuffer: 1 << 28 }));
  console.log(`| ${cmd} | ${median(res.map((r) => r.secs)).toFixed(3)} | ${Math.max(...res.map((r) => r.rssMiB)).toFixed(0)} |`);
}
const base = Array.from({ length: 5 }, () => measure(process.execPath, ['-e', '0']));
console.log(`| (node start-up alone) | ${median(base.map((r) => r.secs)).toFixed(3)} | ${Math.max(...base.map((r) => r.rssMiB)).toFixed(0)} |`);
rmSync(file, { force: true });
