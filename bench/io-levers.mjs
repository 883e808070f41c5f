#!/usr/bin/env node
// The I/O levers of issue 18 one by one, on a page-cached copy of one file through core's
// FileSource/FileSink (no format code): copy into the write-behind buffer vs `writeOwned`, and
// read-ahead depth. Interleaved runs, medians; CPU seconds and minor faults come from
// process.resourceUsage, which the machine's load does not change much.
// Usage: node bench/io-levers.mjs [--gib 1] [--runs 5]   (after npm run build)
import { rmSync, statSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { crc32 as zlibCrc32 } from 'node:zlib';
import { FileSink, FileSource } from '../packages/core/dist/node.node.js';
import { median, warmUp, writeSyntheticSafetensors } from './lib.mjs';

const { values } = parseArgs({ options: { gib: { type: 'string', default: '1' }, runs: { type: 'string', default: '5' } } });
const input = `/tmp/tp-io-levers-${process.pid}.bin`;
const out = `/tmp/tp-io-levers-${process.pid}.out`;
const scratch = `/tmp/tp-io-levers-${process.pid}.warm`;
writeSyntheticSafetensors(input, Number(values.gib));
const CHUNK = 4 * 1024 * 1024;
let crcState = 0;

async function copy({ owned, ahead, writes = 2, crc = false }) {
  rmSync(out, { force: true });
  warmUp(scratch, statSync(input).size);
  const before = process.resourceUsage();
  const t0 = performance.now();
  const src = await FileSource.open(input);
  src.readAhead = ahead;
  const sink = await FileSink.create(out, { fsync: false, writesInFlight: writes });
  for (let pos = 0; pos < src.size; pos += CHUNK) {
    const c = await src.read(pos, Math.min(CHUNK, src.size - pos));
    // What a stored npz or ZIP member costs on this thread besides the copy (zlib.crc32, 4-5 GB/s).
    if (crc) crcState = zlibCrc32(c, crcState);
    await (owned ? sink.writeOwned(c) : sink.write(c));
  }
  await sink.commit();
  await src.close();
  const secs = (performance.now() - t0) / 1000;
  const after = process.resourceUsage();
  return { secs, cpu: (after.userCPUTime + after.systemCPUTime - before.userCPUTime - before.systemCPUTime) / 1e6, faults: after.minorPageFault - before.minorPageFault };
}

const variants = [
  { label: 'write (copy), no read-ahead (before)', owned: false, ahead: 0 },
  { label: 'writeOwned, no read-ahead', owned: true, ahead: 0 },
  { label: 'writeOwned, read-ahead 1', owned: true, ahead: 1 },
  { label: 'writeOwned, read-ahead 2, two writes queued (default)', owned: true, ahead: 2 },
  { label: 'writeOwned, read-ahead 4', owned: true, ahead: 4 },
  { label: 'writeOwned, read-ahead 2, one write at a time (before round 4)', owned: true, ahead: 2, writes: 1 },
  { label: 'writeOwned, read-ahead 2, CRC-32 on this thread, one write at a time', owned: true, ahead: 2, writes: 1, crc: true },
  { label: 'writeOwned, read-ahead 2, CRC-32 on this thread, two writes queued (default)', owned: true, ahead: 2, crc: true },
];
const res = variants.map(() => []);
for (let r = 0; r < Number(values.runs); r++) for (const [i, v] of variants.entries()) res[i].push(await copy(v));
console.log(`\n${values.gib} GiB page-cached copy, median of ${values.runs} interleaved runs (load ${(await import('node:os')).loadavg()[0].toFixed(1)})\n| variant | wall s | CPU s | minor faults |\n|---|---|---|---|`);
for (const [i, v] of variants.entries()) {
  const m = (k) => median(res[i].map((x) => x[k]));
  console.log(`| ${v.label} | ${m('secs').toFixed(2)} | ${m('cpu').toFixed(2)} | ${m('faults').toFixed(0)} |`);
}

// The kernel's copy against the user buffer's alignment, alone: 256 MiB of the input rewritten in
// place 8 times (no page is allocated, so the VM's first-touch faults do not enter), through one
// 4 MiB buffer from malloc (Buffer.allocUnsafeSlow) and one of FileSource's read buffers
// (page-aligned, as dd's is).
const { closeSync, openSync, readSync, writeSync, copyFileSync } = await import('node:fs');
copyFileSync(input, out);
function inPlace(buf) {
  const fi = openSync(input, 'r');
  const fo = openSync(out, 'r+');
  let read = 0n;
  let written = 0n;
  for (let rep = 0; rep < 8; rep++) {
    for (let pos = 0; pos < 256 * 1024 * 1024; pos += buf.byteLength) {
      const t0 = process.hrtime.bigint();
      const n = readSync(fi, buf, 0, buf.byteLength, pos);
      const t1 = process.hrtime.bigint();
      writeSync(fo, buf, 0, n, pos);
      written += process.hrtime.bigint() - t1;
      read += t1 - t0;
    }
  }
  closeSync(fi);
  closeSync(fo);
  return { read: Number(read) / 1e9, written: Number(written) / 1e9 };
}
const buffers = [
  ['malloc (Buffer.allocUnsafeSlow)', () => Buffer.allocUnsafeSlow(CHUNK)],
  ['FileSource read buffer (page-aligned)', async () => {
    const src = await FileSource.open(input);
    const buf = await src.read(0, CHUNK);
    await src.close();
    return buf;
  }],
];
const copies = buffers.map(() => []);
for (let r = 0; r < Number(values.runs); r++) for (const [i, [, make]] of buffers.entries()) copies[i].push(inPlace(await make()));
console.log(`\n2 GiB of pread + pwrite in place through one 4 MiB buffer, median of ${values.runs}\n| buffer | pread s | pwrite s |\n|---|---|---|`);
for (const [i, [label]] of buffers.entries()) {
  console.log(`| ${label} | ${median(copies[i].map((x) => x.read)).toFixed(2)} | ${median(copies[i].map((x) => x.written)).toFixed(2)} |`);
}

// The same copy against where the bytes sit in their pages: a pread of file offset o into a page-aligned
// buffer, and a pwrite of that buffer to file offset d, are one copy each between a page-cache page and
// the buffer, whose cost depends on the distance between the two addresses (mod 4096). dd copies
// offset 0 to offset 0; a converted file's tensors start wherever its header ends.
const distances = [0, 8, 16, 24, 32, 40, 64, 72, 96, 1024, 3016, 4064, 4088];
function shifted(buf, d) {
  const fi = openSync(input, 'r');
  const fo = openSync(out, 'r+');
  let read = 0n;
  let written = 0n;
  for (let rep = 0; rep < 8; rep++) {
    for (let pos = 0; pos < 256 * 1024 * 1024; pos += buf.byteLength) {
      const t0 = process.hrtime.bigint();
      readSync(fi, buf, 0, buf.byteLength, pos + ((4096 - d) % 4096));
      const t1 = process.hrtime.bigint();
      writeSync(fo, buf, 0, buf.byteLength, pos + d);
      written += process.hrtime.bigint() - t1;
      read += t1 - t0;
    }
  }
  closeSync(fi);
  closeSync(fo);
  return { read: Number(read) / 1e9, written: Number(written) / 1e9 };
}
const aligned = await buffers[1][1]();
const byDistance = distances.map(() => []);
for (let r = 0; r < Number(values.runs); r++) for (const [i, d] of distances.entries()) byDistance[i].push(shifted(aligned, d));
console.log(`\n2 GiB of pread + pwrite in place through a page-aligned 4 MiB buffer, the file offsets d bytes off the buffer's page offset (pread from offset ≡ -d, pwrite to offset ≡ d, mod 4096), median of ${values.runs}\n| d | pread s | pwrite s |\n|---|---|---|`);
for (const [i, d] of distances.entries()) {
  console.log(`| ${d} | ${median(byDistance[i].map((x) => x.read)).toFixed(2)} | ${median(byDistance[i].map((x) => x.written)).toFixed(2)} |`);
}

// FileSink's copy path (`write`, what a cast or an inflated member goes through) from an unaligned
// start: its write-behind buffer holds the bytes at their file position's offset in the page.
const leads = [0, 8, 3016];
const viaSink = leads.map(() => []);
const pattern = new Uint8Array(CHUNK).fill(7);
for (let r = 0; r < Number(values.runs); r++) {
  for (const [i, lead] of leads.entries()) {
    rmSync(out, { force: true });
    warmUp(scratch, 1 << 30);
    const before = process.resourceUsage();
    const t0 = performance.now();
    const sink = await FileSink.create(out, { fsync: false });
    await sink.write(new Uint8Array(lead));
    for (let k = 0; k < 256; k++) await sink.write(pattern);
    await sink.commit();
    const after = process.resourceUsage();
    viaSink[i].push({ secs: (performance.now() - t0) / 1000, cpu: (after.userCPUTime + after.systemCPUTime - before.userCPUTime - before.systemCPUTime) / 1e6 });
  }
}
console.log(`\n1 GiB through FileSink.write (copied into its buffer) after a lead of d bytes, median of ${values.runs}\n| d | wall s | CPU s |\n|---|---|---|`);
for (const [i, lead] of leads.entries()) {
  console.log(`| ${lead} | ${median(viaSink[i].map((x) => x.secs)).toFixed(2)} | ${median(viaSink[i].map((x) => x.cpu)).toFixed(2)} |`);
}
rmSync(input, { force: true });
rmSync(out, { force: true });
