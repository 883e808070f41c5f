/**
 * The lint checks of the workspace's shape (scripts/check-cycles.mjs, scripts/check-layers.mjs):
 * each refuses the fixture workspace made to break it (fixtures/workspaces/) and passes this one.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from './helpers.ts';

function check(script: string, root?: string): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, [join(REPO, 'scripts', script), ...(root ? ['--root', join(REPO, 'fixtures/workspaces', root)] : [])], { encoding: 'utf8' });
  return { status: r.status, out: r.stdout + r.stderr };
}

describe('check-cycles', () => {
  it('fails on a package cycle through a peer dependency, naming both packages', () => {
    const r = check('check-cycles.mjs', 'peer-cycle');
    expect(r.status).toBe(1);
    expect(r.out).toContain('package cycle: @tensorport/cli <-> tensorport');
    // the package below both is in no cycle
    expect(r.out).not.toMatch(/cycle:.*core/);
  });

  it('passes this workspace: no package cycle, no import circle', () => {
    const r = check('check-cycles.mjs');
    expect(r.out).toMatch(/no package cycle among \d+ workspace packages, no import circle/);
    expect(r.status).toBe(0);
  });
});

describe('check-layers', () => {
  it('fails when the command line imports below the library, or a package imports what it does not declare', () => {
    const r = check('check-layers.mjs', 'shell-below-library');
    expect(r.status).toBe(1);
    expect(r.out).toContain("packages/cli/src/convert.ts: imports '@tensorport/core': the command line is a shell over the library");
    expect(r.out).toContain("packages/lib/src/inflate.ts: imports 'fflate', which @tensorport/lib's package.json does not declare");
    // allowed imports are not reported
    expect(r.out).not.toContain("'@tensorport/lib/node'");
    expect(r.out).not.toContain("'node:fs/promises'");
    expect(r.out).toContain('2 import(s) across a layer');
  });

  it('passes this workspace', () => {
    const r = check('check-layers.mjs');
    expect(r.out).toContain('the command line only the library');
    expect(r.status).toBe(0);
  });
});
