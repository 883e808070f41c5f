#!/usr/bin/env node
// Converts a large stored .npz (written by numpy) to safetensors with `tensorport convert` and
// compares it with `cp` of the same file and with numpy's own way (np.load every array, then
// safetensors.numpy.save_file), in one run. Peak RSS must stay under 200 MiB whatever the size.
// Usage: node bench/npz.mjs [--gib 2] [--dir DIR] [--runs 3] [--keep]
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
const input = join(values.dir, `npz-${gib}gib.npz`);

// 64 MiB float32 members written one at a time as np.savez does (zipfile, stored, .npy bodies
// by np.lib.format.write_array), so Python never holds the whole archive.
measure(py, ['-c', `
import sys, zipfile, numpy as np
path, gib = sys.argv[1], float(sys.argv[2])
n = max(1, round(gib * 1024**3 / (64 * 1024**2)))
rng = np.random.default_rng(0)
with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
    for i in range(n):
        a = rng.standard_normal((4096, 4096), dtype=np.float32)
        with zf.open(f"model.layers.{i}.mlp.weight.npy", "w", force_zip64=True) as f:
            np.lib.format.write_array(f, a, allow_pickle=False)
`, input, String(gib)]);

console.log(`bench: npz → safetensors, ${gib} GiB stored npz in ${values.dir}`);
const size = statSync(input).size;
const out = join(values.dir, 'npz-out.safetensors');
const c = contest({ input, out, runs });
const cp = c.run('cp', 'cp', [input, out]);
const ours = c.run('tensorport convert', process.execPath, [CLI, 'convert', input, out, '--force']);
c.run('numpy np.load + safetensors.numpy.save_file', py, ['-c', 'import sys, numpy as np; from safetensors.numpy import save_file; z = np.load(sys.argv[1]); save_file({k: z[k] for k in z.files}, sys.argv[2])', input, out]);
c.print(size, cp);
if (!values.keep) rmSync(input, { force: true });
if (ours.rss >= RSS_LIMIT_MIB) {
  console.error(`bench: FAIL: tensorport peak RSS ${ours.rss.toFixed(0)} MiB is not under ${RSS_LIMIT_MIB} MiB`);
  process.exit(1);
}
