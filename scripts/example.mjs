// `npm run example`: the main job on a bundled example. Converts a committed fixture (a tiny
// Llama-style BF16 checkpoint written by the real safetensors library) to F32, inspects and
// validates the result, then shards it and validates the shards. Output goes to tmp/example/
// (gitignored); re-running replaces it.
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';

const cli = 'packages/cli/bin/tensorport.cjs';
const input = 'fixtures/safetensors/transformer_shard.safetensors';
const out = 'tmp/example';
mkdirSync(out, { recursive: true });

const steps = [
  ['convert', input, `${out}/model-f32.safetensors`, '--dtype', 'f32', '--force'],
  ['inspect', `${out}/model-f32.safetensors`],
  ['validate', `${out}/model-f32.safetensors`],
  ['convert', `${out}/model-f32.safetensors`, `${out}/shards/`, '--max-shard-size', '16KB', '--force'],
  ['validate', `${out}/shards/`],
];

for (const args of steps) {
  console.log(`\n$ tensorport ${args.join(' ')}`);
  const r = spawnSync(process.execPath, [cli, ...args], { stdio: 'inherit' });
  if (r.status !== 0) {
    console.error(`example: 'tensorport ${args[0]}' exited ${r.status ?? r.signal}`);
    process.exit(1);
  }
}
console.log(`\nexample: done; the converted files are in ${out}/`);
