#!/usr/bin/env node
// Converts a large `torch.save` checkpoint to safetensors with `tensorport convert` and compares it
// with `cp` of the same file and with the Python way (torch.load(weights_only=True) +
// safetensors.torch.save_file), in one run. Peak RSS must stay under 300 MiB whatever the size.
// Usage: node bench/torch.mjs [--gib 2] [--dir DIR] [--runs 3] [--keep]
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
const RSS_LIMIT_MIB = 300;
mkdirSync(values.dir, { recursive: true });
const py = findPython(['torch', 'safetensors']);
if (!py) {
  console.error('bench: needs a python3 with torch and safetensors (it writes the input with torch.save)');
  process.exit(2);
}
const input = join(values.dir, `torch-${gib}gib.pt`);

// A transformers-like state_dict of 64 MiB float32 matrices plus a few small tensors, by torch.save.
const made = measure(py, ['-c', `
import sys, torch
path, gib = sys.argv[1], float(sys.argv[2])
n = max(1, round(gib * 1024**3 / (64 * 1024**2)))
g = torch.Generator().manual_seed(0)
sd = {}
for i in range(n):
    sd[f"model.layers.{i}.mlp.weight"] = torch.randn(4096, 4096, generator=g)
    sd[f"model.layers.{i}.input_layernorm.weight"] = torch.ones(4096)
torch.save(sd, path)
print(torch.__version__)
`, input, String(gib)]);

console.log(`bench: torch.save checkpoint → safetensors, ${gib} GiB in ${values.dir} (torch ${made.stdout.trim()})`);
const size = statSync(input).size;
const out = join(values.dir, 'torch-out.safetensors');
const c = contest({ input, out, runs });
const cp = c.run('cp', 'cp', [input, out]);
const ours = c.run('tensorport convert', process.execPath, [CLI, 'convert', input, out, '--force']);
c.run('torch.load(weights_only=True) + safetensors.torch.save_file', py, ['-c', 'import sys, torch; from safetensors.torch import save_file; save_file(torch.load(sys.argv[1], weights_only=True), sys.argv[2], metadata={"format": "pt"})', input, out]);
c.print(size, cp);
if (!values.keep) rmSync(input, { force: true });
if (ours.rss >= RSS_LIMIT_MIB) {
  console.error(`bench: FAIL: tensorport peak RSS ${ours.rss.toFixed(0)} MiB is not under ${RSS_LIMIT_MIB} MiB`);
  process.exit(1);
}
