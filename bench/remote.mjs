#!/usr/bin/env node
// Remote reads over HTTP Range against a local nginx (loopback): what inspect/scan/list cost in
// requests and bytes, and convert's throughput and peak RSS against `curl -o` of the same file.
// Usage: node bench/remote.mjs [--gb 100] [--bin-gib 2] [--runs 3]
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CLI, findPython, median, requireBuild, writeSparseSafetensors } from './lib.mjs';

const { values } = parseArgs({ options: { gb: { type: 'string', default: '100' }, 'bin-gib': { type: 'string', default: '2' }, runs: { type: 'string', default: '3' } } });
requireBuild();
const runs = Number(values.runs);
const py = findPython(['torch', 'numpy']);
if (!py) {
  console.error('bench: needs a python3 with torch and numpy');
  process.exit(2);
}
const dir = mkdtempSync(join(tmpdir(), 'tp-bench-remote-'));
chmodSync(dir, 0o755);
const www = join(dir, 'www');
mkdirSync(www, { mode: 0o755 });
for (const d of ['logs', 'tmp', 'run', 'conf']) mkdirSync(join(dir, d));

// 1. a sparse safetensors file: 1,000 BF16 tensors covering the size, a ~100 KB header
const sparse = join(www, 'sparse.safetensors');
writeSparseSafetensors(sparse, Number(values.gb));
// 2. a torch .bin written by torch.save (random values: nothing compresses), 3. an npz of 64 arrays of 4 MiB
const bin = join(www, 'pytorch_model.bin');
const npz = join(www, 'arrays.npz');
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
for (const f of [sparse, bin, npz]) chmodSync(f, 0o644);

const port = await new Promise((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const p = s.address().port;
    s.close(() => resolve(p));
  });
});
writeFileSync(join(dir, 'conf/nginx.conf'), `daemon off; worker_processes 1; pid run/nginx.pid; error_log logs/error.log warn;
events { worker_connections 256; }
http { access_log off; client_body_temp_path tmp/body; proxy_temp_path tmp/proxy; fastcgi_temp_path tmp/fastcgi; uwsgi_temp_path tmp/uwsgi; scgi_temp_path tmp/scgi;
  default_type application/octet-stream; sendfile on; gzip off; keepalive_requests 100000;
  server { listen 127.0.0.1:${port}; root www; location / { } } }
`);
const nginx = spawn(process.env.TENSORPORT_NGINX ?? '/usr/sbin/nginx', ['-p', `${dir}/`, '-c', 'conf/nginx.conf', '-e', 'logs/error.log'], { stdio: 'ignore' });
await new Promise((r) => setTimeout(r, 500));
const base = `http://127.0.0.1:${port}`;

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
      const r = f();
      if (r.status !== 0) throw new Error(`${label} failed (${r.status}):\n${r.stderr}`);
      return r;
    });
    const secs = median(res.map((r) => r.secs));
    const cost = res[0].requests === null ? '' : ` (${res[0].requests} requests, ${res[0].fetched} bytes fetched of ${res[0].size})`;
    console.log(`| ${label}${cost} | ${secs.toFixed(2)} | ${(size / secs / 1e9).toFixed(2)} GB/s | ${Math.max(...res.map((r) => r.rssMiB)).toFixed(0)} |`);
  }
} finally {
  nginx.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
