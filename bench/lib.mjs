// Shared helpers for the benchmark scripts: timing whole commands with their peak RSS.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, closeSync, existsSync, ftruncateSync, linkSync, mkdirSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
/**
 * The built packages a bench runs. TENSORPORT_BENCH_PACKAGES points at a private copy (`cp -a
 * packages` with node_modules linked back) so that others' rebuilds of the packages' dist/ folders during a
 * long run cannot change the code being measured halfway.
 */
export const PACKAGES = process.env.TENSORPORT_BENCH_PACKAGES ?? join(ROOT, 'packages');
/** The CLI as users run it: the `tensorport` bin, so a bench's floor is the real start-up (docs/packaging.md). */
export const CLI = join(PACKAGES, 'cli/bin/tensorport.cjs');

export function requireBuild() {
  if (!existsSync(join(PACKAGES, 'cli/dist/bin.cjs'))) {
    console.error('bench: build first (npm run build)');
    process.exit(2);
  }
}

/** Runs a command under GNU time; returns wall seconds and peak RSS in MiB. */
export function measure(cmd, args, opts = {}) {
  const r = spawnSync('/usr/bin/time', ['-f', '%e %M', cmd, ...args], { encoding: 'utf8', ...opts });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}):\n${r.stderr}`);
  const last = r.stderr.trim().split('\n').pop();
  const [secs, kb] = last.split(' ').map(Number);
  return { secs, rssMiB: kb / 1024, stdout: r.stdout };
}

/**
 * Touches `bytes` of fresh page cache untimed and frees it, before a timed run: on this VM memory the
 * guest freed a while ago costs a host fault per page when touched again (bench/all.mjs, top).
 */
export function warmUp(scratch, bytes) {
  if (bytes <= 0) return;
  measure('dd', ['if=/dev/zero', `of=${scratch}`, 'bs=4M', `count=${Math.ceil(bytes / 4194304)}`, 'status=none']);
  rmSync(scratch, { force: true });
}

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** Finds a python3 that imports every module named, or null. */
export function findPython(modules) {
  for (const exe of [process.env.TENSORPORT_PYTHON, 'python3', '/usr/bin/python3'].filter(Boolean)) {
    try {
      execFileSync(exe, ['-c', modules.map((m) => `import ${m}`).join('; ')], { stdio: 'ignore' });
      return exe;
    } catch {
      /* try the next one */
    }
  }
  return null;
}

export const fmtRate = (bytes, secs) => `${(bytes / secs / 1e9).toFixed(2)} GB/s`;

/**
 * Contenders writing the same output from the same input, each run `runs` times (the output is
 * removed before every run). The page cache is warmed once first, so all read from memory alike.
 */
export function contest({ input, out, runs }) {
  const rows = [];
  measure('cat', [input], { stdio: ['ignore', 'ignore', 'pipe'] });
  return {
    rows,
    /** Runs one contender; returns its row { label, secs (median), rss (max MiB) }. */
    run(label, cmd, args) {
      const res = [];
      for (let r = 0; r < runs; r++) {
        rmSync(out, { force: true });
        res.push(measure(cmd, args));
      }
      const row = { label, secs: median(res.map((x) => x.secs)), rss: Math.max(...res.map((x) => x.rssMiB)) };
      rows.push(row);
      return row;
    },
    /** Prints the Markdown table, throughput from `bytes`, ratios against `baseline` (a row). */
    print(bytes, baseline) {
      rmSync(out, { force: true });
      console.log(`\n| tool | time (s, median of ${runs}) | throughput | vs ${baseline.label} | peak RSS (MiB) |\n|---|---|---|---|---|`);
      for (const r of rows) {
        console.log(`| ${r.label} | ${r.secs.toFixed(2)} | ${fmtRate(bytes, r.secs)} | ${(baseline.secs / r.secs).toFixed(2)}× | ${r.rss.toFixed(0)} |`);
      }
    },
  };
}

/**
 * A safetensors header of `entries` (JSON member texts) written by hand at the start of `fd` (so a
 * bench does not depend on the code it measures): u64 LE length, the JSON space-padded to 8 bytes.
 * Returns the JSON's length.
 */
export function writeHeader(fd, entries) {
  let json = `{${entries.join(',')}}`;
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const head = Buffer.alloc(8);
  head.writeBigUInt64LE(BigInt(json.length));
  writeSync(fd, head);
  writeSync(fd, json);
  return json.length;
}

/**
 * Writes a safetensors file of 64 MiB F32 tensors with varied contents, about `gib` GiB (header by
 * writeHeader). The layout is the one safetensors' `save_file` writes (data and header entries
 * in name order, all tensors being F32), so the file is what a real checkpoint of these tensors
 * looks like. `name(i)` names tensor i; `metadata` is a raw JSON object text or null.
 */
export function writeSyntheticSafetensors(path, gib, { name = (i) => `layers.${i}.weight`, metadata = null, tensorBytes = 64 * 1024 * 1024 } = {}) {
  const count = Math.max(1, Math.round((gib * 1024 ** 3) / tensorBytes));
  const names = Array.from({ length: count }, (_, i) => name(i));
  const order = names.map((_, i) => i).sort((a, b) => (names[a] < names[b] ? -1 : names[a] > names[b] ? 1 : 0));
  const entries = metadata === null ? [] : [`"__metadata__":${metadata}`];
  for (const [k, i] of order.entries()) {
    const shape = tensorBytes % (4 * 4096) === 0 ? `4096,${tensorBytes / 4 / 4096}` : `${tensorBytes / 4}`;
    entries.push(`"${names[i]}":{"dtype":"F32","shape":[${shape}],"data_offsets":[${k * tensorBytes},${(k + 1) * tensorBytes}]}`);
  }
  const fd = openSync(path, 'w');
  try {
    writeHeader(fd, entries);
    const chunk = new Float32Array(tensorBytes / 4);
    for (const i of order) {
      for (let j = 0; j < chunk.length; j++) chunk[j] = Math.sin(i * 7919 + j) * 0.02;
      writeSync(fd, new Uint8Array(chunk.buffer));
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * A sparse safetensors file of about `gb` GB: 1,000 BF16 tensors of equal size and a realistic
 * (~100 KB) header, the data a hole (nothing read but the header should cost anything). Returns the
 * file size, the tensor count and the header length.
 */
export function writeSparseSafetensors(path, gb) {
  const count = 1000;
  const per = Math.floor((gb * 1e9) / count / 2) * 2;
  const entries = [];
  for (let i = 0; i < count; i++) entries.push(`"layers.${i}.weight":{"dtype":"BF16","shape":[${per / 2}],"data_offsets":[${i * per},${(i + 1) * per}]}`);
  const fd = openSync(path, 'w');
  let headerBytes;
  try {
    headerBytes = writeHeader(fd, entries);
    ftruncateSync(fd, 8 + headerBytes + per * count);
  } finally {
    closeSync(fd);
  }
  return { size: 8 + headerBytes + per * count, count, headerBytes };
}

/**
 * A Debian nginx serving `files` on a free loopback port, configured as the remote tests' rig
 * (sendfile, no gzip); null without nginx. `files` maps a URL path (subdirectories allowed) to a
 * file path, hard-linked into the root, or to `{ text }`, written there. Returns { base, stop }.
 */
export async function startNginx(dir, files) {
  const exe = process.env.TENSORPORT_NGINX ?? '/usr/sbin/nginx';
  if (!existsSync(exe)) return null;
  const root = join(dir, 'nginx');
  const www = join(root, 'www');
  mkdirSync(www, { recursive: true, mode: 0o755 });
  for (const d of ['logs', 'tmp', 'run', 'conf']) mkdirSync(join(root, d), { recursive: true });
  chmodSync(dir, 0o755);
  chmodSync(root, 0o755);
  for (const [name, what] of Object.entries(files)) {
    const at = join(www, name);
    mkdirSync(dirname(at), { recursive: true, mode: 0o755 });
    if (typeof what === 'string') linkSync(what, at);
    else writeFileSync(at, what.text);
    chmodSync(at, 0o644);
  }
  const port = await new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
  writeFileSync(join(root, 'conf/nginx.conf'), `daemon off; worker_processes 1; pid run/nginx.pid; error_log logs/error.log warn;
events { worker_connections 256; }
http { access_log off; client_body_temp_path tmp/body; proxy_temp_path tmp/proxy; fastcgi_temp_path tmp/fastcgi; uwsgi_temp_path tmp/uwsgi; scgi_temp_path tmp/scgi;
  default_type application/octet-stream; sendfile on; gzip off; keepalive_requests 100000;
  server { listen 127.0.0.1:${port}; root www; location / { } } }
`);
  const child = spawn(exe, ['-p', `${root}/`, '-c', 'conf/nginx.conf', '-e', 'logs/error.log'], { stdio: 'ignore' });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 50; i++) {
    if (spawnSync('curl', ['-sf', '-o', '/dev/null', '-r', '0-0', `${base}/${Object.keys(files)[0]}`]).status === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    base,
    stop: () => new Promise((resolve) => {
      child.once('exit', resolve);
      child.kill('SIGTERM');
    }),
  };
}
