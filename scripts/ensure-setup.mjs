// Makes `npm test` and `npm run example` work on a fresh clone: installs the workspace with the
// pinned pnpm (through npx, so no global pnpm is needed) when node_modules is missing or older
// than pnpm-lock.yaml. Builds are turbo's job (`test` depends on `build`).
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';

const marker = 'node_modules/.modules.yaml';
const upToDate = existsSync(marker) && statSync(marker).mtimeMs >= statSync('pnpm-lock.yaml').mtimeMs;

if (!upToDate) {
  console.error('ensure-setup: installing dependencies (npx --yes pnpm@12.4.2 install --frozen-lockfile)');
  const r = spawnSync('npx', ['--yes', 'pnpm@12.4.2', 'install', '--frozen-lockfile'], { stdio: 'inherit' });
  if (r.status !== 0) {
    console.error(`ensure-setup: install failed (exit ${r.status ?? r.signal}); see the output above`);
    process.exit(1);
  }
}
