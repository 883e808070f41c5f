#!/usr/bin/env node
// Issue 18 asks which way sharded outputs should go concurrent: worker threads or concurrent I/O in
// one thread. One page-cached safetensors input split into 4 shards (--no-fsync), interleaved runs:
// writeCheckpointPath with jobs 1 and 4 (concurrent async I/O, what the library does) against the
// same shards written by 1, 2 and 4 worker threads (each opens the input and streams its shards
// with writeSafetensors). Prints medians of wall and CPU time; checks the worker outputs are the
// library's bytes.
// Usage: node bench/shard-workers.mjs [--gib 2] [--runs 3]   (after npm run build)
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { median, PACKAGES, writeSyntheticSafetensors } from './lib.mjs';

const CORE = join(PACKAGES, 'core/dist/node.node.js');
const CORE_MAIN = join(PACKAGES, 'core/dist/index.node.js');

if (!isMainThread) {
  // A worker: write the shards it is given, from its own open of the input.
  const { openCheckpointPath, FileSink } = await import(CORE);
  const { writeSafetensors } = await import(CORE_MAIN);
  const { input, shards } = workerData;
  const ck = await openCheckpointPath(input);
  const byName = new Map(ck.tensors.map((t) => [t.name, t]));
  for (const s of shards) {
    const sink = await FileSink.create(s.path, { fsync: false });
    await writeSafetensors(s.names.map((n) => byName.get(n)), s.metadata, sink);
  }
  await ck.close();
  parentPort.postMessage('done');
} else {
  const { values } = parseArgs({ options: { gib: { type: 'string', default: '2' }, runs: { type: 'string', default: '3' } } });
  const { openCheckpointPath, writeCheckpointPath } = await import(CORE);
  const { planShards } = await import(CORE_MAIN);
  const dir = join(tmpdir(), `tp-shard-workers-${process.pid}`);
  mkdirSync(dir);
  const input = join(dir, 'in.safetensors');
  // One input into 4 shards: no shard is a copy of an input file, so every byte streams.
  writeSyntheticSafetensors(input, Number(values.gib), { metadata: '{"format":"pt"}' });
  execFileSync('cat', [input], { stdio: ['ignore', 'ignore', 'inherit'] });
  const ck = await openCheckpointPath(input);
  const total = ck.tensors.reduce((n, t) => n + t.byteLength, 0);
  const maxShardSize = Math.ceil(total / 4);
  const plans = planShards(ck.tensors, maxShardSize);
  const tensorNames = ck.tensors.map((t) => t.name);
  await ck.close();

  const cpu = () => {
    const u = process.resourceUsage();
    return (u.userCPUTime + u.systemCPUTime) / 1e6;
  };
  async function library(jobs, out) {
    const c = await openCheckpointPath(input);
    await writeCheckpointPath(c.tensors, c.metadata, out + '/', { maxShardSize, fsync: false, jobs });
    await c.close();
  }
  async function workers(n, out) {
    mkdirSync(out, { recursive: true });
    const names = plans.map((_, i) => `model-${String(i + 1).padStart(5, '0')}-of-${String(plans.length).padStart(5, '0')}.safetensors`);
    const meta = { format: 'pt' };
    const shards = plans.map((p, i) => ({ path: join(out, names[i]), names: p.indices.map((k) => tensorNames[k]), metadata: meta }));
    const mine = Array.from({ length: n }, (_, w) => shards.filter((_, i) => i % n === w));
    await Promise.all(mine.map((s) => new Promise((resolve, reject) => {
      const w = new Worker(new URL(import.meta.url), { workerData: { input, shards: s } });
      w.once('message', resolve);
      w.once('error', reject);
    })));
  }

  const variants = [
    { label: 'library, jobs 1 (async I/O)', run: (out) => library(1, out) },
    { label: 'library, jobs 4 (async I/O)', run: (out) => library(4, out) },
    { label: '1 worker thread', run: (out) => workers(1, out) },
    { label: '2 worker threads', run: (out) => workers(2, out) },
    { label: '4 worker threads', run: (out) => workers(4, out) },
  ];
  const res = variants.map(() => ({ secs: [], cpu: [] }));
  const runs = Number(values.runs);
  const loads = [loadavg()[0]];
  for (let r = 0; r < runs; r++) {
    for (let k = 0; k < variants.length; k++) {
      const i = (k + r) % variants.length;
      const out = join(dir, `out-${i}`);
      rmSync(out, { recursive: true, force: true });
      const c0 = cpu();
      const t0 = performance.now();
      await variants[i].run(out);
      res[i].secs.push((performance.now() - t0) / 1000);
      res[i].cpu.push(cpu() - c0);
    }
  }
  loads.push(loadavg()[0]);
  // The worker outputs must be the library's shard files, byte for byte.
  const ref = join(dir, 'out-0');
  for (const i of [2, 3, 4]) {
    for (const f of readdirSync(ref).filter((f) => f.endsWith('.safetensors'))) execFileSync('cmp', [join(ref, f), join(dir, `out-${i}`, f)]);
  }
  console.log(`${(total / 2 ** 30).toFixed(1)} GiB into ${plans.length} shards, --no-fsync, median of ${runs}, load ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)} on ${cpus().length} cores`);
  console.log('| variant | wall s | CPU s (main + workers) | vs jobs 1 |\n|---|---|---|---|');
  const base = median(res[0].secs);
  for (const [i, v] of variants.entries()) {
    const s = median(res[i].secs);
    console.log(`| ${v.label} | ${s.toFixed(2)} | ${median(res[i].cpu).toFixed(2)} | ${(base / s).toFixed(2)}× |`);
  }
  rmSync(dir, { recursive: true, force: true });
}
