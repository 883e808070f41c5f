// Shared helpers for the benchmark scripts: timing whole commands with their peak RSS.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const CLI = join(ROOT, 'packages/cli/dist/cli.js');

export function requireBuild() {
  if (!existsSync(CLI)) {
    console.error('bench: build first (npm run build)');
    process.exit(2);
  }
}

/** Runs a command under GNU time; returns wall seconds and peak RSS in MiB. */
export function measure(cmd, args, opts = {}) {
  const r = spawnSync('/usr/bin/time', ['-f', '%e %M', cmd, ...args], { encoding: 'utf8', ...opts });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}):\n${r.stderr}`);
  const last = r.stderr.trim().split('\n').pop();
  const [secs, kb] = last.split(' ').map(Number);
  return { secs, rssMiB: kb / 1024, stdout: r.stdout };
}

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** Finds a python3 that imports every module named, or null. */
export function findPython(modules) {
  for (const exe of [process.env.TENSORPORT_PYTHON, 'python3', '/usr/bin/python3'].filter(Boolean)) {
    try {
      execFileSync(exe, ['-c', modules.map((m) => `import ${m}`).join('; ')], { stdio: 'ignore' });
      return exe;
    } catch {
      /* try the next one */
    }
  }
  return null;
}

export const fmtRate = (bytes, secs) => `${(bytes / secs / 1e9).toFixed(2)} GB/s`;
