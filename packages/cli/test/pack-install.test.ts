/**
 * The packages install and work outside the workspace (issue 12 "Done means"): runs
 * scripts/pack-install.mjs, which packs every public package, installs the tarballs with plain npm
 * into an empty directory under the OS temp dir and runs the CLI, the README examples and every
 * entry point under import() and require() there. Needs the packages built (turbo's test task
 * builds this package's dependencies, which are all of them) and the npm registry for commander
 * and fflate. 45 to 90 s on a loaded 2-core machine, most of it npx, pnpm and npm start-up.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

interface Check {
  group: string;
  name: string;
  ok: boolean;
  detail: string;
}

const SCRIPT = join(import.meta.dirname, '..', '..', '..', 'scripts', 'pack-install.mjs');
let checks: Check[] = [];

beforeAll(() => {
  const r = spawnSync(process.execPath, [SCRIPT, '--json'], { encoding: 'utf8', timeout: 240_000, maxBuffer: 64 * 1024 * 1024 });
  const last = r.stdout.trim().split('\n').pop() ?? '';
  try {
    checks = (JSON.parse(last) as { checks: Check[] }).checks;
  } catch {
    throw new Error(`pack-install printed no report (exit ${r.status ?? r.signal}):\n${r.stderr}\n${r.stdout.slice(-4000)}`);
  }
}, 250_000);

/** The failed checks of one group, as readable lines (an empty group fails too: it never ran). */
function failures(group: string): string[] {
  const mine = checks.filter((c) => c.group === group);
  if (mine.length === 0) return [`no ${group} check ran; setup: ${checks.filter((c) => c.group === 'setup').map((c) => c.detail).join('; ')}`];
  return mine.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`);
}

describe('packed tarballs installed with npm in an empty directory', () => {
  it('every public package packs with published exports, versions for workspace:*, LICENSE and README', () => {
    expect(failures('tarballs')).toEqual([]);
  });

  it('npm install ./*.tgz installs each package from its tarball', () => {
    expect(failures('install')).toEqual([]);
  });

  it('npx tensorport --help, convert model.pt model.safetensors and inspect work, with the bytes the workspace CLI writes', () => {
    expect(failures('cli')).toEqual([]);
  });

  it('every README example runs against the installed packages', () => {
    expect(failures('readme')).toEqual([]);
  });

  it('under import(), every entry point throws the one TensorportError class (also the one require() returns)', () => {
    expect(failures('esm')).toEqual([]);
  });

  it('under require(), every entry point throws the one TensorportError class', () => {
    expect(failures('cjs')).toEqual([]);
  });

  it('TypeScript (nodenext) resolves and checks the declarations of every entry point under import and require', () => {
    expect(failures('types')).toEqual([]);
  });
});
