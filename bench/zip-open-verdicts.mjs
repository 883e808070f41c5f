// The batched ZIP open against the one-header-at-a-time reference at full size: 12,000 members
// (no padding, so many headers per window) and 120 mutated archives, as the core test ran it before
// issue 11 (43 s alone, over its timeout on a busy machine). The test file keeps a 500-member,
// 80-run version; this runs the same property through it with the sizes raised.
//   node bench/zip-open-verdicts.mjs [members=12000] [runs=120]
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './lib.mjs';

const members = process.argv[2] ?? '12000';
const runs = process.argv[3] ?? '120';
const t = process.hrtime.bigint();
const r = spawnSync('npx', ['vitest', 'run', 'test/zip-open-batched.test.ts', '-t', 'same verdict', '--testTimeout', '600000'], {
  cwd: join(ROOT, 'packages/core'),
  stdio: 'inherit',
  env: { ...process.env, TENSORPORT_ZIP_VERDICT_MEMBERS: members, TENSORPORT_ZIP_VERDICT_RUNS: runs },
});
console.log(`zip open verdicts: ${members} members, ${runs} runs: ${(Number(process.hrtime.bigint() - t) / 1e9).toFixed(1)} s, exit ${r.status}`);
process.exit(r.status ?? 1);
