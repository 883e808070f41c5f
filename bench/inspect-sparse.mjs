#!/usr/bin/env node
// Inspects and validates a 100 GB sparse safetensors file: only the header should be read.
// Usage: node bench/inspect-sparse.mjs [--gb 100] [--dir DIR]
import { closeSync, ftruncateSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CLI, ROOT, measure, median, requireBuild } from './lib.mjs';

const { values } = parseArgs({ options: { gb: { type: 'string', default: '100' }, dir: { type: 'string', default: join(ROOT, 'bench/out') } } });
requireBuild();
mkdirSync(values.dir, { recursive: true });
const file = join(values.dir, 'sparse.safetensors');
// 1,000 tensors of equal size covering the requested total: a realistic header (~100 KB).
const total = Number(values.gb) * 1e9;
const count = 1000;
const per = Math.floor(total / count / 2) * 2;
const entries = [];
for (let i = 0; i < count; i++) entries.push(`"layers.${i}.weight":{"dtype":"BF16","shape":[${per / 2}],"data_offsets":[${i * per},${(i + 1) * per}]}`);
let json = `{${entries.join(',')}}`;
json += ' '.repeat((8 - (json.length % 8)) % 8);
const head = Buffer.alloc(8);
head.writeBigUInt64LE(BigInt(json.length));
const fd = openSync(file, 'w');
writeSync(fd, head);
writeSync(fd, json);
ftruncateSync(fd, 8 + json.length + per * count);
closeSync(fd);
console.log(`bench: ${((8 + json.length + per * count) / 1e9).toFixed(1)} GB sparse file, ${count} tensors, header ${json.length} bytes`);
console.log('| command | wall time (s, median of 5, includes node start-up) | peak RSS (MiB) |\n|---|---|---|');
for (const cmd of ['inspect', 'validate']) {
  const res = Array.from({ length: 5 }, () => measure(process.execPath, [CLI, cmd, file, '--json'], { maxBuffer: 1 << 28 }));
  console.log(`| ${cmd} | ${median(res.map((r) => r.secs)).toFixed(3)} | ${Math.max(...res.map((r) => r.rssMiB)).toFixed(0)} |`);
}
const base = Array.from({ length: 5 }, () => measure(process.execPath, ['-e', '0']));
console.log(`| (node start-up alone) | ${median(base.map((r) => r.secs)).toFixed(3)} | ${Math.max(...base.map((r) => r.rssMiB)).toFixed(0)} |`);
rmSync(file, { force: true });
