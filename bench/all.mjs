#!/usr/bin/env node
// `npm run bench`: the goals of issue 31 (start-up, every read-into-memory path against dd bs=4M,
// remote convert against curl, deflated npz against numpy, 100,000 tensors), with issue 18's ratios
// against cp, `cp && sync`, cmp and the Python route kept as information, in one run on generated
// inputs (page-cached, in a temp directory deleted afterwards).
// Contenders of a group run interleaved, the order rotated each round (A B C, B C A, C A B, ...),
// and report medians, so a load change hits all alike. Before every timed run the output's bytes
// are written once untimed (dd to a scratch file, removed): on this VM, memory the guest freed a
// while ago costs a host fault per page when touched again (a fresh 2 GiB output then takes
// 5-12 s instead of 0.4 s, whoever writes it), and the warm-up hands every contender the same
// recently used pages. Prints one table of ratios and peak RSS; the last lines say which goals hold.
// Usage: npm run bench [-- --size 2] [--runs 3] [--dir /tmp]   (after npm run build; size in GiB)
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';
import { CLI, ROOT as ROOT_DIR, findPython, measure, median, requireBuild, startNginx, warmUp, writeSyntheticSafetensors } from './lib.mjs';
import { manyTensorCommands, manyTensorInputs } from './many-tensors.mjs';

const { values } = parseArgs({ options: { size: { type: 'string', default: '2' }, runs: { type: 'string', default: '3' }, dir: { type: 'string', default: tmpdir() }, tensors: { type: 'string', default: '100000' } } });
requireBuild();
const gib = Number(values.size);
const runs = Number(values.runs);
/** Tiny tensors in the larger many-tensor input (the smaller has a tenth); 0 leaves them out. */
const many = Number(values.tensors);
const dir = mkdtempSync(join(values.dir, 'tensorport-bench-'));
const node = process.execPath;
const tp = (...args) => [node, [CLI, ...args]];
const loads = [loadavg()[0]];
const rows = [];
// Best of 7 for the MLX kernels, both sides alike: numpy's own rate moved 28-55 M/s between runs of
// 3 on this shared VM (docs/benchmarks.md, round 4), more than the ratios being checked.
const mlxRepeat = Math.max(runs, 7);

const scratch = join(dir, 'warm-up.bin');

/** Runs contenders interleaved `runs` times; `out` is removed before each run; `expect` is an exit status. */
function group(name, bytes, contenders) {
  const warm = contenders.flatMap((c) => c.inputs ?? []);
  if (warm.length) measure('sh', ['-c', 'cat "$@" > /dev/null', 'sh', ...new Set(warm)]);
  const res = contenders.map(() => []);
  const started = performance.now();
  for (let r = 0; r < runs; r++) {
    for (let k = 0; k < contenders.length; k++) {
      const i = (k + r) % contenders.length;
      const c = contenders[i];
      if (c.out) rmSync(c.out, { recursive: true, force: true });
      warmUp(scratch, bytes);
      const [cmd, args] = c.run;
      // stdout to /dev/null: a 100,000-tensor inspect prints megabytes that nobody reads here.
      const wrapped = ['-c', `"$@" > /dev/null; test $? -eq ${c.expect ?? 0}`, 'sh', cmd, ...args];
      res[i].push(measure('sh', wrapped));
    }
  }
  loads.push(loadavg()[0]);
  // Each group's medians as soon as it ends, so that an interrupted run still says something.
  const summary = contenders.map((c, i) => `${c.label} ${median(res[i].map((x) => x.secs)).toFixed(2)} s`).join('; ');
  console.log(`  ${name} (${((performance.now() - started) / 1000).toFixed(0)} s, load ${loads.at(-1).toFixed(1)}): ${summary}`);
  const out = {};
  for (const [i, c] of contenders.entries()) {
    if (c.out) rmSync(c.out, { recursive: true, force: true });
    const row = { group: name, label: c.label, key: c.key, secs: median(res[i].map((x) => x.secs)), rss: Math.max(...res[i].map((x) => x.rssMiB)), bytes };
    rows.push(row);
    out[c.key] = row;
  }
  return out;
}

/**
 * Start-up in milliseconds: GNU time's 10 ms steps are too coarse here, so each run is timed around
 * spawnSync, 15 interleaved rounds, medians.
 */
function startupGroup(contenders) {
  const res = contenders.map(() => []);
  for (let r = 0; r < 15; r++) {
    for (let k = 0; k < contenders.length; k++) {
      const i = (k + r) % contenders.length;
      const [cmd, args] = contenders[i].run;
      const t = performance.now();
      const p = spawnSync(cmd, args, { stdio: 'ignore' });
      const ms = performance.now() - t;
      if (p.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${p.status})`);
      res[i].push(ms);
    }
  }
  loads.push(loadavg()[0]);
  const out = {};
  for (const [i, c] of contenders.entries()) out[c.key] = { label: c.label, ms: median(res[i]) };
  console.log(`  start-up (load ${loads.at(-1).toFixed(1)}): ${contenders.map((c) => `${c.label} ${out[c.key].ms.toFixed(0)} ms`).join('; ')}`);
  return out;
}

/**
 * A Python route and its durable twin: the same script, then os.fsync of the output, so that our
 * default (which fdatasyncs) is compared with a Python route that is as durable, and --no-fsync
 * with one that is not (docs/benchmarks.md, "Like for like").
 */
const pyRoutes = (exe, label, code, args, out) => [
  { key: 'py', label, run: [exe, ['-c', code, ...args]], out },
  { key: 'pySync', label: `${label} + os.fsync`, run: [exe, ['-c', `${code}\nimport os\nfd = os.open(sys.argv[2], os.O_RDONLY)\nos.fsync(fd)\nos.close(fd)`, ...args]], out },
];
const py = findPython(['numpy', 'safetensors']);
const pyTorch = findPython(['torch', 'safetensors']);
console.log(`bench: ${gib} GiB inputs in ${dir}, ${runs} interleaved runs per contender, load ${loads[0].toFixed(1)}`);
const results = {};
try {
  // The floor under every CLI row: starting node and loading the CLI.
  const tiny = join(dir, 'tiny.safetensors');
  writeSyntheticSafetensors(tiny, 0, { tensorBytes: 1024 - 96 });
  results.startup = startupGroup([
    { key: 'node', label: 'node -e 0', run: [node, ['-e', '0']] },
    { key: 'tp', label: 'tensorport --version', run: tp('--version') },
    { key: 'inspect', label: 'tensorport inspect (1 KiB safetensors)', run: tp('inspect', tiny) },
  ]);

  // safetensors → safetensors. The input is what save_file writes for these tensors.
  const st = join(dir, 'in.safetensors');
  writeSyntheticSafetensors(st, gib, { metadata: '{"format":"pt"}' });
  const size = statSync(st).size;
  const out = join(dir, 'out.safetensors');
  const base = (label) => [
    { key: 'cp', label: 'cp', run: ['cp', [st, out]], out, inputs: [st] },
    { key: 'cpsync', label: 'cp && sync', run: ['sh', ['-c', 'cp "$1" "$2" && sync "$2"', 'sh', st, out]], out },
    { key: 'dd', label: 'dd bs=4M', run: ['dd', [`if=${st}`, `of=${out}`, 'bs=4M', 'status=none']], out },
  ].map((c) => ({ ...c, label: `${c.label} (${label})` }));
  results.st = group('safetensors → safetensors', size, [
    ...base('safetensors'),
    { key: 'tpNoSync', label: 'tensorport convert --no-fsync', run: tp('convert', st, out, '--no-fsync'), out },
    { key: 'tp', label: 'tensorport convert', run: tp('convert', st, out), out },
    { key: 'verify', label: 'tensorport convert --verify', run: tp('convert', st, out, '--verify'), out },
    // A changed header: the data can no longer be copied by the kernel as one file, so it is read into memory.
    { key: 'header', label: 'tensorport convert --metadata (header changed) --no-fsync', run: tp('convert', st, out, '--metadata', 'bench=1', '--no-fsync'), out },
    ...(py ? pyRoutes(py, 'python safetensors load_file + save_file', 'import sys; from safetensors.numpy import load_file, save_file; save_file(load_file(sys.argv[1]), sys.argv[2], metadata={"format": "pt"})', [st, out], out) : []),
  ]);

  // diff against cmp
  const st2 = join(dir, 'copy.safetensors');
  copyFileSync(st, st2);
  results.diff = group('diff', size, [
    { key: 'cmp', label: 'cmp (equal files)', run: ['cmp', [st, st2]], inputs: [st, st2] },
    { key: 'tp', label: 'tensorport diff (equal files)', run: tp('diff', st, st2, '--json') },
  ]);
  rmSync(st2);

  // remote: the same file over HTTP Range from a local nginx (loopback), against curl -o
  // hf://bench/model through HF_ENDPOINT: the revision API's answer and the resolve path, as the Hub lays them out
  const commit = 'b'.repeat(40);
  const nginx = await startNginx(dir, {
    [basename(st)]: st,
    'api/models/bench/model/revision/main': { text: JSON.stringify({ sha: commit, siblings: [{ rfilename: 'model.safetensors' }] }) },
    [`bench/model/resolve/${commit}/model.safetensors`]: st,
  });
  if (nginx) {
    try {
      const url = `${nginx.base}/${basename(st)}`;
      results.remote = group('remote safetensors (nginx, loopback)', size, [
        { key: 'curl', label: 'curl -o', run: ['curl', ['-sf', '-o', out, url]], out },
        { key: 'tpNoSync', label: 'tensorport convert <url> --no-fsync', run: tp('convert', url, out, '--no-fsync'), out },
        { key: 'hub', label: 'tensorport convert hf://bench/model --no-fsync (HF_ENDPOINT)', run: ['env', [`HF_ENDPOINT=${nginx.base}`, ...tp('convert', 'hf://bench/model', out, '--no-fsync').flat()]], out },
        { key: 'header', label: 'tensorport convert <url> --metadata --no-fsync', run: tp('convert', url, out, '--metadata', 'bench=1', '--no-fsync'), out },
      ]);
    } finally {
      await nginx.stop();
    }
  }

  // sharded output, concurrently, through the CLI
  const shardSize = String(Math.ceil(size / 4));
  const shardDir = join(dir, 'shards') + '/';
  results.shard = group('4 shards, --no-fsync', size, [
    { key: 'cp', label: 'cp (same bytes)', run: ['cp', [st, out]], out, inputs: [st] },
    { key: 'dd', label: 'dd bs=4M (same bytes)', run: ['dd', [`if=${st}`, `of=${out}`, 'bs=4M', 'status=none']], out },
    { key: 'cli1', label: 'tensorport convert out/ --jobs 1', run: tp('convert', st, shardDir, '--max-shard-size', shardSize, '--jobs', '1', '--no-fsync'), out: shardDir },
    { key: 'cli2', label: 'tensorport convert out/ --jobs 2', run: tp('convert', st, shardDir, '--max-shard-size', shardSize, '--jobs', '2', '--no-fsync'), out: shardDir },
  ]);
  rmSync(st);

  // stored and deflated npz → safetensors (numpy writes the inputs, like np.savez / savez_compressed)
  if (py) {
    for (const [key, method, frac] of [['npz', 'ZIP_STORED', 1], ['npzDeflated', 'ZIP_DEFLATED', 0.25]]) {
      const npz = join(dir, `${key}.npz`);
      measure(py, ['-c', `
import sys, zipfile, numpy as np
path, gib, method = sys.argv[1], float(sys.argv[2]), getattr(zipfile, sys.argv[3])
n = max(1, round(gib * 1024**3 / (64 * 1024**2)))
rng = np.random.default_rng(0)
with zipfile.ZipFile(path, "w", method, allowZip64=True) as zf:
    for i in range(n):
        a = rng.standard_normal((4096, 4096), dtype=np.float32).astype(np.float16).astype(np.float32)
        with zf.open(f"model.layers.{i}.mlp.weight.npy", "w", force_zip64=True) as f:
            np.lib.format.write_array(f, a, allow_pickle=False)
`, npz, String(gib * frac), method]);
      const bytes = key === 'npz' ? statSync(npz).size : Math.max(1, Math.round((gib * frac * 1024 ** 3) / (64 * 1024 ** 2))) * 64 * 1024 ** 2;
      const label = key === 'npz' ? 'stored npz → safetensors' : 'deflated npz → safetensors (inflate)';
      results[key] = group(label, bytes, [
        ...(key === 'npz' ? base('npz').map((c) => ({ ...c, run: [c.run[0], c.run[1].map((a) => (a === st ? npz : a.replace(st, npz)))], inputs: [npz] })) : []),
        { key: 'tpNoSync', label: 'tensorport convert --no-fsync', run: tp('convert', npz, out, '--no-fsync'), out, inputs: [npz] },
        ...(key === 'npz' ? [{ key: 'noCrc', label: 'tensorport convert --no-fsync --no-crc', run: tp('convert', npz, out, '--no-fsync', '--no-crc'), out }] : []),
        { key: 'tp', label: 'tensorport convert', run: tp('convert', npz, out), out },
        ...pyRoutes(py, 'python np.load + safetensors.numpy.save_file', 'import sys, numpy as np; from safetensors.numpy import save_file; z = np.load(sys.argv[1]); save_file({k: z[k] for k in z.files}, sys.argv[2], metadata={"format": "pt"})', [npz, out], out),
      ]);
      rmSync(npz);
    }
  }

  // torch ZIP → safetensors
  if (pyTorch) {
    const pt = join(dir, 'in.pt');
    measure(pyTorch, ['-c', `
import sys, torch
path, gib = sys.argv[1], float(sys.argv[2])
n = max(1, round(gib * 1024**3 / (64 * 1024**2)))
g = torch.Generator().manual_seed(0)
torch.save({f"model.layers.{i}.mlp.weight": torch.randn(4096, 4096, generator=g) for i in range(n)}, path)
`, pt, String(gib)]);
    results.pt = group('torch .pt → safetensors', statSync(pt).size, [
      ...base('.pt').map((c) => ({ ...c, run: [c.run[0], c.run[1].map((a) => (a === st ? pt : a.replace(st, pt)))], inputs: [pt] })),
      { key: 'tpNoSync', label: 'tensorport convert --no-fsync', run: tp('convert', pt, out, '--no-fsync'), out },
      { key: 'tp', label: 'tensorport convert', run: tp('convert', pt, out), out },
      ...pyRoutes(pyTorch, 'python torch.load + safetensors.torch.save_file', 'import sys, torch; from safetensors.torch import save_file; save_file(torch.load(sys.argv[1], weights_only=True), sys.argv[2], metadata={"format": "pt"})', [pt, out], out),
    ]);
    rmSync(pt);
  }

  // Many tiny tensors: N/10 and N, safetensors and torch, each command; linear and ≤ 300 MiB
  if (many > 0) {
    results.many = {};
    for (const count of [many / 10, many]) {
      const inputs = manyTensorInputs(dir, count, pyTorch);
      for (const [kind, input] of [['safetensors', inputs.st], ['pt', inputs.pt]]) {
        if (!input) continue;
        const manyOut = join(dir, 'many-out.safetensors');
        results.many[`${kind}${count}`] = group(`${count} tensors, ${kind}`, 0, manyTensorCommands(input, manyOut).map(([label, args]) => ({ key: label, label: `tensorport ${label}`, run: tp(...args), out: manyOut })));
        rmSync(input);
      }
    }
  }

  // MLX affine kernels against the vectorised numpy ones (bench/mlx.mjs; CPU-bound, no files).
  if (py) {
    const started = performance.now();
    const r = spawnSync(node, [join(ROOT_DIR, 'bench/mlx.mjs'), '--json', '--repeat', String(mlxRepeat)], { encoding: 'utf8', maxBuffer: 1 << 26 });
    if (r.status === 0) results.mlx = JSON.parse(r.stdout.trim().split('\n').pop());
    else console.error(`bench/mlx.mjs failed:\n${r.stderr}`);
    loads.push(loadavg()[0]);
    console.log(`  MLX kernels: ${((performance.now() - started) / 1000).toFixed(0)} s, load ${loads.at(-1).toFixed(1)}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

// The table: each row against its group's first row (cp or cmp), throughput of the tensor bytes.
console.log(`\n| path | contender | median s | GB/s | vs first row | peak RSS MiB |\n|---|---|---|---|---|---|`);
let last = '';
let first = null;
for (const r of rows) {
  if (r.group !== last) [last, first] = [r.group, r];
  console.log(`| ${r.group === (rows[rows.indexOf(r) - 1]?.group) ? '' : r.group} | ${r.label} | ${r.secs.toFixed(2)} | ${r.bytes ? (r.bytes / r.secs / 1e9).toFixed(2) : ''} | ${(first.secs / r.secs).toFixed(2)}× | ${r.rss.toFixed(0)} |`);
}

if (results.mlx) {
  console.log(`\nMLX affine kernels, 4096×4096 weight, best of ${mlxRepeat}, M elements/s of wall time (of CPU time):\n| case | TS quantize | numpy quantize | TS dequantize | numpy dequantize | identical bytes |\n|---|---|---|---|---|---|`);
  const rate = (n, s, c) => `${(n / s / 1e6).toFixed(1)} (${(n / c / 1e6).toFixed(1)})`;
  for (const m of results.mlx) {
    console.log(`| ${m.case} | ${rate(m.elements, m.tsQuantize, m.tsQuantizeCpu)} | ${rate(m.elements, m.npQuantize, m.npQuantizeCpu)} | ${rate(m.elements, m.tsDequantize, m.tsDequantizeCpu)} | ${rate(m.elements, m.npDequantize, m.npDequantizeCpu)} | ${m.identical ? 'yes' : 'NO'} |`);
  }
}

const goals = [];
const ratio = (a, b) => (a && b ? b.secs / a.secs : NaN);
const check = (what, value, ok, shown) => goals.push(`${Number.isNaN(value) ? 'n/a ' : ok ? 'HOLDS' : 'MISSED'}  ${what}: ${shown}`);
/** Faster than the Python route at the same durability: --no-fsync vs Python, default vs Python + os.fsync. */
function pythonGoals(k, g) {
  if (!g.py) return;
  const loose = ratio(g.tpNoSync, g.py);
  check(`${k} --no-fsync ≥ 1.5× the Python route (neither syncs)`, loose, loose >= 1.5, `${loose.toFixed(2)}×`);
  const durable = ratio(g.tp, g.pySync);
  check(`${k} default ≥ 1.5× the Python route + os.fsync (both durable)`, durable, durable >= 1.5, `${durable.toFixed(2)}×`);
  const mixed = ratio(g.tp, g.py);
  goals.push(`info   ${k} default (fsync) vs the Python route without a sync: ${mixed.toFixed(2)}×`);
}
// Issue 31's goals first; issue 18's ratios against cp and cmp follow as information (the limit of
// a path that reads tensors into memory is dd bs=4M, two copies, not cp's one in-kernel copy).
if (results.startup) {
  const su = results.startup;
  check('start-up: tensorport --version ≤ 80 ms', su.tp.ms, su.tp.ms <= 80, `${su.tp.ms.toFixed(0)} ms (node -e 0 ${su.node.ms.toFixed(0)} ms)`);
  check('start-up: tensorport inspect of a 1 KiB file ≤ 150 ms', su.inspect.ms, su.inspect.ms <= 150, `${su.inspect.ms.toFixed(0)} ms (node -e 0 ${su.node.ms.toFixed(0)} ms)`);
  // Node reads and parses that whole bundle before running any script (~40 ms here).
  if (process.env.NODE_EXTRA_CA_CERTS) goals.push(`info   NODE_EXTRA_CA_CERTS is set (${process.env.NODE_EXTRA_CA_CERTS}): every node start, node -e 0 included, pays for it`);
}
const ddGoal = (what, g, key) => {
  if (!g?.[key] || !g.dd) return;
  const v = ratio(g[key], g.dd);
  check(`${what} --no-fsync ≥ 0.95× dd bs=4M`, v, v >= 0.95, `${v.toFixed(2)}×`);
};
ddGoal('stored npz', results.npz, 'tpNoSync');
if (results.npz?.noCrc) goals.push(`info   stored npz --no-fsync --no-crc vs dd bs=4M: ${ratio(results.npz.noCrc, results.npz.dd).toFixed(2)}× (the CRC-32 pass costs ${(results.npz.tpNoSync.secs - results.npz.noCrc.secs).toFixed(2)} s)`);
ddGoal('torch .pt', results.pt, 'tpNoSync');
ddGoal('safetensors, header changed', results.st, 'header');
ddGoal('4 shards --jobs 1', results.shard, 'cli1');
ddGoal('4 shards --jobs 2', results.shard, 'cli2');
if (results.remote) {
  const r = results.remote;
  const v = r.tpNoSync.secs / r.curl.secs;
  check('remote convert <url> ≤ 1.3× curl -o', v, v <= 1.3, `${v.toFixed(2)}× (${r.tpNoSync.secs.toFixed(2)} s against ${r.curl.secs.toFixed(2)} s)`);
  const h = r.hub.secs / r.curl.secs;
  check('remote convert hf:// ≤ 1.3× curl -o', h, h <= 1.3, `${h.toFixed(2)}× (${r.hub.secs.toFixed(2)} s)`);
  goals.push(`info   remote convert <url> --metadata (read into memory): ${(r.header.secs / r.curl.secs).toFixed(2)}× curl -o; peak RSS ${Math.max(r.tpNoSync.rss, r.header.rss).toFixed(0)} MiB`);
} else {
  goals.push('n/a    remote convert <url> ≤ 1.3× curl -o: no nginx (/usr/sbin/nginx or TENSORPORT_NGINX)');
}
if (results.npzDeflated) {
  pythonGoals('deflated npz', results.npzDeflated);
  const rss = Math.max(results.npzDeflated.tp.rss, results.npzDeflated.tpNoSync.rss);
  check('deflated npz peak RSS ≤ 200 MiB', rss, rss <= 200, `${rss.toFixed(0)} MiB`);
}
if (results.many) {
  // Linear: the larger run's time above start-up at most 1.25 × ten times the smaller one's.
  const floor = (results.startup?.inspect.ms ?? 0) / 1000;
  for (const kind of ['safetensors', 'pt']) {
    const small = results.many[`${kind}${many / 10}`];
    const large = results.many[`${kind}${many}`];
    if (!small || !large) continue;
    for (const cmd of ['inspect', 'validate', 'convert']) {
      const scale = (large[cmd].secs - floor) / (10 * Math.max(small[cmd].secs - floor, 0.01));
      check(`${many} tensors, ${kind} ${cmd}: linear (≤ 1.25× ten times ${many / 10})`, scale, scale <= 1.25, `${large[cmd].secs.toFixed(2)} s against ${small[cmd].secs.toFixed(2)} s (${scale.toFixed(2)}×)`);
      check(`${many} tensors, ${kind} ${cmd}: peak RSS ≤ 300 MiB`, large[cmd].rss, large[cmd].rss <= 300, `${large[cmd].rss.toFixed(0)} MiB`);
    }
  }
}
for (const k of ['st', 'npz', 'pt']) {
  const g = results[k];
  if (!g) continue;
  goals.push(`info   ${k} --no-fsync vs dd bs=4M ${ratio(g.tpNoSync, g.dd).toFixed(2)}×, vs cp ${ratio(g.tpNoSync, g.cp).toFixed(2)}×; default vs cp && sync ${ratio(g.tp, g.cpsync).toFixed(2)}×`);
  pythonGoals(k, g);
  const rss = Math.max(g.tp.rss, g.tpNoSync.rss);
  const limit = k === 'pt' ? 300 : 200;
  check(`${k} peak RSS ≤ ${limit} MiB`, rss, rss <= limit, `${rss.toFixed(0)} MiB`);
}
if (results.diff) goals.push(`info   diff ${ratio(results.diff.tp, results.diff.cmp).toFixed(2)}× cmp`);
if (results.st?.verify) {
  const cost = (results.st.verify.secs - results.st.tp.secs) / results.st.tp.secs;
  check('--verify costs ≤ 0.5× of its conversion', cost, cost <= 0.5, `+${(cost * 100).toFixed(0)}%`);
}
if (results.shard) {
  const s = results.shard;
  goals.push(`info   shards: --jobs 2 ${ratio(s.cli2, s.cli1).toFixed(2)}× of --jobs 1; --jobs 1 ${ratio(s.cli1, s.cp).toFixed(2)}× cp`);
}
for (const m of results.mlx ?? []) {
  for (const op of ['Quantize', 'Dequantize']) {
    const wall = m[`np${op}`] / m[`ts${op}`];
    const cpu = m[`np${op}Cpu`] / m[`ts${op}Cpu`];
    check(`MLX ${m.case} ${op.toLowerCase()} ≥ 2× numpy (CPU time; identical bytes)`, cpu, cpu >= 2 && m.identical, `${cpu.toFixed(2)}× CPU, ${wall.toFixed(2)}× wall${m.identical ? '' : ', bytes DIFFER'}`);
  }
}
console.log(`\nload average during the run: ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)} on ${(await import('node:os')).cpus().length} cores`);
console.log(goals.join('\n'));
