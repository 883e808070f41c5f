// What running each pickle once saves on a torch checkpoint with many tensors (issue 28 item 2).
// A .pt of N small tensors is written by `tensorport convert` (the same pickle shape torch.save
// writes: one persistent id and one _rebuild_tensor_v2 per tensor), then, in this process with the
// built packages, interleaved and median of --runs:
//   two passes: scanCheckpoint (interprets data.pkl for the verdict), then openTorchCheckpoint
//               interpreting data.pkl again for the tensor plan (what convert did before adaed54)
//   one pass:   scanCheckpoint capturing its run, openTorchCheckpoint assembling from the capture
//               (what convert does now, packages/torch-zip/src/format/single.ts)
// and the whole `tensorport convert in.pt out.safetensors` under GNU time for scale.
//   node bench/pickle-once.mjs [--tensors 10000] [--runs 5]
// Figures in docs/benchmarks.md ("One pass over a pickle").
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CLI, PACKAGES, measure, median, requireBuild, writeHeader } from './lib.mjs';

requireBuild();
const { values } = parseArgs({ options: { tensors: { type: 'string', default: '10000' }, runs: { type: 'string', default: '5' } } });
const n = Number(values.tensors);
const runs = Number(values.runs);
const { FileSource } = await import(join(PACKAGES, 'core/dist/node.node.js'));
const { scanCheckpoint, openTorchCheckpoint } = await import(join(PACKAGES, 'torch-zip/dist/index.js'));

/** A safetensors file of N F32 tensors of 4 elements, named like a large model's. */
function writeSmallTensors(path, count) {
  const entries = [];
  for (let i = 0; i < count; i++) entries.push(`"model.layers.${i >> 6}.experts.${i & 63}.w":{"dtype":"F32","shape":[4],"data_offsets":[${i * 16},${i * 16 + 16}]}`);
  const data = Buffer.alloc(count * 16);
  for (let i = 0; i < count * 4; i++) data.writeFloatLE(i % 97, i * 4);
  const fd = openSync(path, 'w');
  try {
    writeHeader(fd, entries);
    writeSync(fd, data);
  } finally {
    closeSync(fd);
  }
}

async function twoPasses(path) {
  const source = await FileSource.open(path);
  try {
    const scan = await scanCheckpoint(source, { path });
    if (!scan.safe) throw new Error('unsafe');
    const ck = await openTorchCheckpoint(source, {});
    return ck.tensors.length;
  } finally {
    await source.close();
  }
}

async function onePass(path) {
  const source = await FileSource.open(path);
  try {
    const capture = { allowObjects: false };
    const scan = await scanCheckpoint(source, { path, capture });
    if (!scan.safe || !capture.pickles) throw new Error('unsafe or nothing captured');
    const ck = await openTorchCheckpoint(source, { captured: capture.pickles });
    return ck.tensors.length;
  } finally {
    await source.close();
  }
}

async function timed(fn, path) {
  const t = process.hrtime.bigint();
  const count = await fn(path);
  if (count !== n) throw new Error(`${fn.name} found ${count} tensors, expected ${n}`);
  return Number(process.hrtime.bigint() - t) / 1e9;
}

const dir = mkdtempSync(join(tmpdir(), 'tensorport-pickle-once-'));
try {
  const st = join(dir, 'in.safetensors');
  const pt = join(dir, 'in.pt');
  writeSmallTensors(st, n);
  measure(process.execPath, [CLI, 'convert', st, pt, '--no-fsync']);
  // One untimed round of each so both run on compiled code.
  await twoPasses(pt);
  await onePass(pt);
  const two = [];
  const one = [];
  for (let i = 0; i < runs; i++) {
    two.push(await timed(twoPasses, pt));
    one.push(await timed(onePass, pt));
  }
  const t2 = median(two);
  const t1 = median(one);
  const cli = [];
  for (let i = 0; i < runs; i++) {
    rmSync(join(dir, 'out.safetensors'), { force: true });
    cli.push(measure(process.execPath, [CLI, 'convert', pt, join(dir, 'out.safetensors'), '--no-fsync']));
  }
  const cliSecs = median(cli.map((r) => r.secs));
  console.log(`${n} tensors in a torch ZIP checkpoint; median of ${runs} interleaved runs; load ${(await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  console.log(`scan + open, two passes over data.pkl: ${(t2 * 1000).toFixed(0)} ms`);
  console.log(`scan + open, one pass (captured):      ${(t1 * 1000).toFixed(0)} ms  (${((1 - t1 / t2) * 100).toFixed(0)} % less, ${((t2 - t1) * 1000).toFixed(0)} ms saved)`);
  console.log(`whole CLI convert in.pt out.safetensors: ${cliSecs.toFixed(2)} s, peak RSS ${median(cli.map((r) => r.rssMiB)).toFixed(0)} MiB`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
