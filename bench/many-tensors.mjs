// Per-tensor costs: a safetensors file with N empty tensors (a header of ~66 bytes per tensor)
// converted by the CLI to .pt, .npz and .safetensors, with wall time and peak RSS (GNU time).
//   node bench/many-tensors.mjs [N=100000] [formats=pt,npz,safetensors]
// Figures in docs/benchmarks.md ("Many tensors").
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, measure, requireBuild } from './lib.mjs';

requireBuild();
const n = Number(process.argv[2] ?? 100_000);
const formats = (process.argv[3] ?? 'pt,npz,safetensors').split(',');

/** N empty F32 tensors named like a large model's, plus one 1-element tensor so data is not empty. */
function manyTensors(count) {
  const parts = ['{'];
  for (let i = 0; i < count; i++) parts.push(`"model.layers.${i >> 6}.experts.${i & 63}.w":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},`);
  parts.push('"z":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}');
  let json = parts.join('');
  json += ' '.repeat((8 - (Buffer.byteLength(json) % 8)) % 8);
  const header = Buffer.from(json);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(header.byteLength));
  return Buffer.concat([len, header, Buffer.alloc(4)]);
}

const dir = mkdtempSync(join(tmpdir(), 'tensorport-many-'));
try {
  const input = join(dir, 'in.safetensors');
  const bytes = manyTensors(n);
  writeFileSync(input, bytes);
  console.log(`${n} tensors, header ${(bytes.byteLength / 1e6).toFixed(1)} MB`);
  for (const f of formats) {
    const out = join(dir, `out.${f}`);
    const r = measure(process.execPath, [CLI, 'convert', input, out, '--force']);
    console.log(`safetensors -> .${f}: ${r.secs.toFixed(1)} s, peak RSS ${r.rssMiB.toFixed(0)} MiB`);
    rmSync(out, { force: true });
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
