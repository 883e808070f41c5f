// Sums the per-package vitest JSON reports into the one closing line CI reads.
// `--clean` removes old reports first, so a package whose run died cannot pass on stale results.
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const packages = readdirSync('packages').filter((dir) => {
  const pkg = join('packages', dir, 'package.json');
  return existsSync(pkg) && JSON.parse(readFileSync(pkg, 'utf8')).scripts?.test;
});

if (process.argv.includes('--clean')) {
  for (const dir of packages) rmSync(join('packages', dir, '.vitest-results.json'), { force: true });
  process.exit(0);
}

let passed = 0;
let failed = 0;
let skipped = 0;
for (const dir of packages) {
  const file = join('packages', dir, '.vitest-results.json');
  if (!existsSync(file)) {
    console.error(`test-summary: ${dir} wrote no report (its test run did not finish)`);
    failed++;
    continue;
  }
  const r = JSON.parse(readFileSync(file, 'utf8'));
  passed += r.numPassedTests ?? 0;
  failed += failures(r);
  skipped += (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
}

/**
 * Failures counted once: each failed test, plus each test file that failed with no failed test in
 * it (an import error, a failing hook). `numFailedTestSuites` counts the file and every describe
 * around a failed test again, so adding it turned one failure into three.
 */
function failures(r) {
  let n = r.numFailedTests ?? 0;
  for (const f of r.testResults ?? []) {
    if (f.status === 'failed' && !(f.assertionResults ?? []).some((a) => a.status === 'failed')) n++;
  }
  // an old or odd report without per-file results: a failed suite is still a failure
  if (n === 0 && (r.numFailedTestSuites ?? 0) > 0 && !Array.isArray(r.testResults)) n = r.numFailedTestSuites;
  return n;
}
// A task can fail without a failing test (no test files, a crash in setup): count it, never hide it.
const turboExit = Number(process.argv.find((a) => a.startsWith('--turbo-exit='))?.split('=')[1] ?? 0);
if (turboExit !== 0 && failed === 0) {
  console.error(`test-summary: turbo exited ${turboExit} although no test failed; counting it as a failure`);
  failed++;
}
console.log(`Tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 ? 1 : 0);
