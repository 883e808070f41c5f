#!/usr/bin/env node
// Remote reads over HTTP Range against a local nginx (loopback): what inspect/scan/list cost in
// requests and bytes, and convert's throughput and peak RSS against `curl -o` of the same file.
// Usage: node bench/remote.mjs [--gb 100] [--bin-gib 2] [--runs 3]
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CLI, findPython, median, requireBuild, startNginx, writeSparseSafetensors } from './lib.mjs';

const { values } = parseArgs({ options: { gb: { type: 'string', default: '100' }, 'bin-gib': { type: 'string', default: '2' }, runs: { type: 'string', default: '3' } } });
requireBuild();
const runs = Number(values.runs);
const py = findPython(['torch', 'numpy']);
if (!py) {
  console.error('bench: needs a python3 with torch and numpy');
  process.exit(2);
}
const dir = mkdtempSync(join(tmpdir(), 'tp-bench-remote-'));
const files = join(dir, 'files');
mkdirSync(files);

// 1. a sparse safetensors file: 1,000 BF16 tensors covering the size, a ~100 KB header
const sparse = join(files, 'sparse.safetensors');
writeSparseSafetensors(sparse, Number(values.gb));
// 2. a torch .bin written by torch.save (random values: nothing compresses), 3. an npz of 64 arrays of 4 MiB
const bin = join(files, 'pytorch_model.bin');
const npz = join(files, 'arrays.npz');
const gib = Number(values['bin-gib']);
execFileSync(py, ['-c', `
import sys, torch, numpy as np
n = int(${gib} * 2**30 / 4 / 16)
g = torch.Generator().manual_seed(0)
torch.save({f"layers.{i}.weight": torch.rand(n, generator=g) for i in range(16)}, sys.argv[1])
rng = np.random.default_rng(0)
np.savez(sys.argv[2], **{f"a{i}": rng.random(1 << 20, dtype=np.float32) for i in range(64)})
print(torch.__version__, np.__version__)
`, bin, npz], { stdio: ['ignore', 'inherit', 'inherit'] });

const nginx = await startNginx(dir, { 'sparse.safetensors': sparse, 'pytorch_model.bin': bin, 'arrays.npz': npz });
if (!nginx) {
  console.error('bench: needs nginx (/usr/sbin/nginx or TENSORPORT_NGINX)');
  rmSync(dir, { recursive: true, force: true });
  process.exit(2);
}
const { base } = nginx;

/** Runs under GNU time: wall seconds, peak RSS, and the CLI's "fetched X of Y bytes in N requests" line. */
function run(cmd, args) {
  const r = spawnSync('/usr/bin/time', ['-f', '%e %M', cmd, ...args], { encoding: 'utf8', maxBuffer: 1 << 28 });
  const lines = r.stderr.trim().split('\n');
  const [secs, kb] = lines.pop().split(' ').map(Number);
  const m = /fetched (\d+) of (\d+) bytes in (\d+) request/.exec(r.stderr);
  return { status: r.status, secs, rssMiB: kb / 1024, fetched: m ? Number(m[1]) : null, size: m ? Number(m[2]) : null, requests: m ? Number(m[3]) : null, stderr: r.stderr };
}
const mb = (n) => (n / 1e6).toFixed(n < 1e6 ? 3 : 1);

try {
  console.log(`bench: nginx ${spawnSync('/usr/sbin/nginx', ['-v'], { encoding: 'utf8' }).stderr.trim()} on 127.0.0.1, node ${process.version}`);
  console.log('\n| command | file size | requests | bytes fetched | share of file | wall (s) | peak RSS (MiB) |\n|---|---|---|---|---|---|---|');
  for (const [label, args] of [
    ['inspect 100 GB sparse safetensors', ['inspect', `${base}/sparse.safetensors`, '--json']],
    ['validate 100 GB sparse safetensors', ['validate', `${base}/sparse.safetensors`]],
    [`scan ${gib} GiB torch .bin`, ['scan', `${base}/pytorch_model.bin`]],
    [`inspect ${gib} GiB torch .bin`, ['inspect', `${base}/pytorch_model.bin`, '--json']],
    ['inspect (list) npz, 64 arrays of 4 MiB', ['inspect', `${base}/arrays.npz`, '--json']],
  ]) {
    const r = run(process.execPath, [CLI, ...args]);
    if (r.status !== 0 && !label.startsWith('scan')) throw new Error(`${label}: ${r.stderr}`);
    console.log(`| ${label} | ${mb(r.size)} MB | ${r.requests} | ${r.fetched} | ${((100 * r.fetched) / r.size).toPrecision(2)}% | ${r.secs.toFixed(2)} | ${r.rssMiB.toFixed(0)} |`);
  }

  const size = statSync(bin).size;
  const out = join(dir, 'out');
  console.log(`\nconvert ${gib} GiB torch .bin → safetensors over loopback (median of ${runs}; curl writes the same bytes to a file)\n`);
  console.log('| contender | wall (s) | throughput | peak RSS (MiB) |\n|---|---|---|---|');
  const rows = [
    ['curl -o (download only)', () => run('curl', ['-s', '-o', join(dir, 'curl.bin'), `${base}/pytorch_model.bin`])],
    ['tensorport convert <url> (no --verify)', () => run(process.execPath, [CLI, 'convert', `${base}/pytorch_model.bin`, `${out}.safetensors`, '--force'])],
    ['tensorport convert <url> --no-fsync', () => run(process.execPath, [CLI, 'convert', `${base}/pytorch_model.bin`, `${out}.safetensors`, '--force', '--no-fsync'])],
    ['tensorport convert <local file> (after curl)', () => run(process.execPath, [CLI, 'convert', join(dir, 'curl.bin'), `${out}-local.safetensors`, '--force'])],
  ];
  for (const [label, f] of rows) {
    const res = Array.from({ length: runs }, () => {
      // Each run writes a new file, as curl's does: replacing the last run's output (--force) costs
      // an unlink of a page-cached GiB that curl's truncate does not show.
      for (const o of [`${out}.safetensors`, `${out}-local.safetensors`]) rmSync(o, { force: true });
      const r = f();
      if (r.status !== 0) throw new Error(`${label} failed (${r.status}):\n${r.stderr}`);
      return r;
    });
    const secs = median(res.map((r) => r.secs));
    const cost = res[0].requests === null ? '' : ` (${res[0].requests} requests, ${res[0].fetched} bytes fetched of ${res[0].size})`;
    console.log(`| ${label}${cost} | ${secs.toFixed(2)} | ${(size / secs / 1e9).toFixed(2)} GB/s | ${Math.max(...res.map((r) => r.rssMiB)).toFixed(0)} |`);
  }
} finally {
  await nginx.stop();
  rmSync(dir, { recursive: true, force: true });
}
