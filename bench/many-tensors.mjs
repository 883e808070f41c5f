// Per-tensor costs: checkpoints of N tiny tensors (4×4 F32, with data), a safetensors file written
// here and a torch .pt written by torch.save, through inspect, validate and convert, with wall time
// and peak RSS (GNU time). `npm run bench` runs the same inputs at N/10 and N for issue 31's goal
// (time linear in the count, peak RSS ≤ 300 MiB).
//   node bench/many-tensors.mjs [N=100000]
// Figures in docs/benchmarks.md ("Many tensors").
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CLI, findPython, measure, requireBuild, writeHeader } from './lib.mjs';

/** Names like a mixture-of-experts model's: 64 experts per layer. */
const nameOf = (i) => `model.layers.${i >> 6}.experts.${i & 63}.w`;

/** N tensors of 16 F32 values each, in name order as save_file writes them (header by writeHeader). */
function writeManySafetensors(path, count) {
  const names = Array.from({ length: count }, (_, i) => nameOf(i)).sort();
  const entries = ['"__metadata__":{"format":"pt"}', ...names.map((n, k) => `"${n}":{"dtype":"F32","shape":[4,4],"data_offsets":[${k * 64},${(k + 1) * 64}]}`)];
  const data = new Float32Array(count * 16);
  for (let j = 0; j < data.length; j++) data[j] = Math.sin(j) * 0.02;
  const fd = openSync(path, 'w');
  try {
    writeHeader(fd, entries);
    writeSync(fd, new Uint8Array(data.buffer));
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes the inputs for `count` tensors into `dir`: { st, pt } (pt null without a python3 that has
 * torch), named by the count.
 */
export function manyTensorInputs(dir, count, pyTorch = findPython(['torch'])) {
  const st = join(dir, `many-${count}.safetensors`);
  writeManySafetensors(st, count);
  let pt = null;
  if (pyTorch) {
    pt = join(dir, `many-${count}.pt`);
    measure(pyTorch, ['-c', `
import sys, torch
n = int(sys.argv[2])
g = torch.Generator().manual_seed(0)
torch.save({f"model.layers.{i >> 6}.experts.{i & 63}.w": torch.randn(4, 4, generator=g) for i in range(n)}, sys.argv[1])
`, pt, String(count)]);
  }
  return { st, pt };
}

/** The commands measured for one input, each `[label, args]`; `out` is the conversion's output path. */
export function manyTensorCommands(input, out) {
  return [
    ['inspect', ['inspect', input]],
    ['validate', ['validate', input]],
    ['convert', ['convert', input, out, '--dtype', 'f16', '--no-fsync']],
  ];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  requireBuild();
  const n = Number(process.argv[2] ?? 100_000);
  const dir = mkdtempSync(join(tmpdir(), 'tensorport-many-'));
  try {
    const inputs = manyTensorInputs(dir, n);
    for (const input of [inputs.st, inputs.pt].filter(Boolean)) {
      const out = join(dir, 'out.safetensors');
      for (const [label, args] of manyTensorCommands(input, out)) {
        rmSync(out, { force: true });
        const r = measure(process.execPath, [CLI, ...args], { maxBuffer: 1 << 28 });
        console.log(`${n} tensors, ${input.endsWith('.pt') ? '.pt' : '.safetensors'} ${label}: ${r.secs.toFixed(2)} s, peak RSS ${r.rssMiB.toFixed(0)} MiB`);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
