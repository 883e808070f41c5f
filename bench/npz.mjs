#!/usr/bin/env node
// Converts a large stored .npz (written by numpy) to safetensors with `tensorport convert` and
// compares it with `cp` of the same file and with numpy's own way (np.load every array, then
// safetensors.numpy.save_file), in one run. Peak RSS must stay under 200 MiB whatever the size.
// With --deflated the members are deflated as np.savez_compressed does (values rounded through f16
// so they compress, as bench/all.mjs makes them): that path is bound by inflating, not copying.
// Usage: node bench/npz.mjs [--gib 2] [--deflated] [--dir DIR] [--runs 3] [--keep]
import { mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CLI, ROOT, contest, findPython, measure, requireBuild } from './lib.mjs';

const { values } = parseArgs({
  options: {
    gib: { type: 'string', default: '2' },
    dir: { type: 'string', default: join(ROOT, 'bench/out') },
    runs: { type: 'string', default: '3' },
    keep: { type: 'boolean', default: false },
    deflated: { type: 'boolean', default: false },
  },
});
requireBuild();
const gib = Number(values.gib);
const runs = Number(values.runs);
const RSS_LIMIT_MIB = 200;
mkdirSync(values.dir, { recursive: true });
const py = findPython(['numpy', 'safetensors']);
if (!py) {
  console.error('bench: needs a python3 with numpy and safetensors (it writes the input with numpy)');
  process.exit(2);
}
const kind = values.deflated ? 'deflated' : 'stored';
const input = join(values.dir, `npz-${kind}-${gib}gib.npz`);

// 64 MiB float32 members written one at a time as np.savez does (zipfile, .npy bodies by
// np.lib.format.write_array), so Python never holds the whole archive.
measure(py, ['-c', `
import sys, zipfile, numpy as np
path, gib, deflated = sys.argv[1], float(sys.argv[2]), sys.argv[3] == "deflated"
n = max(1, round(gib * 1024**3 / (64 * 1024**2)))
rng = np.random.default_rng(0)
with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED if deflated else zipfile.ZIP_STORED, allowZip64=True) as zf:
    for i in range(n):
        a = rng.standard_normal((4096, 4096), dtype=np.float32)
        if deflated:
            a = a.astype(np.float16).astype(np.float32)
        with zf.open(f"model.layers.{i}.mlp.weight.npy", "w", force_zip64=True) as f:
            np.lib.format.write_array(f, a, allow_pickle=False)
`, input, String(gib), kind]);

console.log(`bench: npz → safetensors, ${gib} GiB ${kind} npz in ${values.dir}`);
// Throughput of the array bytes (the deflated file is smaller than what it holds).
const size = values.deflated ? Math.max(1, Math.round((gib * 1024 ** 3) / (64 * 1024 ** 2))) * 64 * 1024 ** 2 : statSync(input).size;
const out = join(values.dir, 'npz-out.safetensors');
const c = contest({ input, out, runs });
// cp of a deflated file copies less than the output holds: there the baseline is numpy's route.
const cp = values.deflated ? null : c.run('cp', 'cp', [input, out]);
const ours = c.run('tensorport convert', process.execPath, [CLI, 'convert', input, out, '--force']);
const numpy = c.run('numpy np.load + safetensors.numpy.save_file', py, ['-c', 'import sys, numpy as np; from safetensors.numpy import save_file; z = np.load(sys.argv[1]); save_file({k: z[k] for k in z.files}, sys.argv[2])', input, out]);
c.print(size, cp ?? numpy);
if (!values.keep) rmSync(input, { force: true });
if (ours.rss >= RSS_LIMIT_MIB) {
  console.error(`bench: FAIL: tensorport peak RSS ${ours.rss.toFixed(0)} MiB is not under ${RSS_LIMIT_MIB} MiB`);
  process.exit(1);
}
