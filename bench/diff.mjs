#!/usr/bin/env node
// `tensorport diff` on two 2 GiB safetensors files (equal, then one flipped bit at the very end):
// wall time and peak RSS against `cmp` of the same files; then the cost of `convert`'s
// --verify on a 1 GiB safetensors rewrite (convert vs convert --verify).
// Usage: node bench/diff.mjs [--gib 2] [--verify-gib 1] [--dir DIR] [--runs 3]
import { closeSync, copyFileSync, mkdirSync, openSync, readSync, rmSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CLI, ROOT, fmtRate, measure, median, requireBuild, writeSyntheticSafetensors } from './lib.mjs';

const { values } = parseArgs({
  options: {
    gib: { type: 'string', default: '2' },
    'verify-gib': { type: 'string', default: '1' },
    dir: { type: 'string', default: join(ROOT, 'bench/out') },
    runs: { type: 'string', default: '3' },
  },
});
requireBuild();
const runs = Number(values.runs);
mkdirSync(values.dir, { recursive: true });

function flipLastBit(path) {
  const fd = openSync(path, 'r+');
  const size = statSync(path).size;
  const b = Buffer.alloc(1);
  // Read-modify-write of the last byte: the difference cmp and diff both find last.
  readSync(fd, b, 0, 1, size - 1);
  b[0] ^= 0x01;
  writeSync(fd, b, 0, 1, size - 1);
  closeSync(fd);
}

/** Times a command; `expect` is its expected exit status (diff and cmp exit 1 on a difference). */
function time(label, cmd, args, expect = 0) {
  const res = [];
  // measure() wants status 0: a shell turns the expected status into 0 (GNU time's max RSS covers children).
  const wrapped = ['-c', `"$@"; test $? -eq ${expect}`, 'sh', cmd, ...args];
  for (let r = 0; r < runs; r++) res.push(measure('sh', wrapped));
  return { label, secs: median(res.map((x) => x.secs)), rss: Math.max(...res.map((x) => x.rssMiB)) };
}

const gib = Number(values.gib);
const a = join(values.dir, `diff-a-${gib}gib.safetensors`);
const b = join(values.dir, `diff-b-${gib}gib.safetensors`);
console.log(`bench: diff, two ${gib} GiB inputs in ${values.dir}`);
writeSyntheticSafetensors(a, gib);
copyFileSync(a, b);
const size = statSync(a).size;
// Warm the page cache so both contenders read from memory alike.
measure('sh', ['-c', `cat "$0" "$1" > /dev/null`, a, b]);
const rows = [];
rows.push(time('cmp (equal files)', 'cmp', [a, b]));
rows.push(time('tensorport diff (equal)', process.execPath, [CLI, 'diff', a, b, '--json']));
flipLastBit(b);
rows.push(time('cmp (last bit flipped)', 'cmp', [a, b], 1));
rows.push(time('tensorport diff (last bit flipped)', process.execPath, [CLI, 'diff', a, b, '--json'], 1));
rows.push(time('tensorport diff --atol 1e-6 (last bit flipped)', process.execPath, [CLI, 'diff', a, b, '--json', '--atol', '1e-6'], 1));
console.log(`\n| command | median s | per side | peak RSS MiB |\n|---|---|---|---|`);
for (const r of rows) console.log(`| ${r.label} | ${r.secs.toFixed(2)} | ${fmtRate(size, r.secs)} | ${r.rss.toFixed(0)} |`);
rmSync(a);
rmSync(b);

const vgib = Number(values['verify-gib']);
const input = join(values.dir, `verify-${vgib}gib.safetensors`);
const out = join(values.dir, 'verify-out.safetensors');
writeSyntheticSafetensors(input, vgib);
measure('sh', ['-c', `cat "$0" > /dev/null`, input]);
// Interleaved runs: the write path (page cache flushes, fsync) is noisy, so both variants see the same conditions.
const variants = [['convert', []], ['convert --verify', ['--verify']]];
const results = variants.map(() => []);
for (let r = 0; r < runs; r++) {
  for (const [i, [, extra]] of variants.entries()) {
    rmSync(out, { force: true });
    results[i].push(measure(process.execPath, [CLI, 'convert', input, out, '--json', ...extra]));
  }
}
const conv = variants.map(([label], i) => ({ label, secs: median(results[i].map((x) => x.secs)), rss: Math.max(...results[i].map((x) => x.rssMiB)) }));
console.log(`\n${vgib} GiB safetensors rewrite\n| command | median s | peak RSS MiB |\n|---|---|---|`);
for (const r of conv) console.log(`| ${r.label} | ${r.secs.toFixed(2)} | ${r.rss.toFixed(0)} |`);
console.log(`verify cost: +${(((conv[1].secs - conv[0].secs) / conv[0].secs) * 100).toFixed(0)}% of the conversion time`);
rmSync(input);
rmSync(out, { force: true });
