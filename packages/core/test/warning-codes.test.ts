import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, WARNING_CODES, isWarningCode } from '@tensorport/core';

/** Every `code: 'X'` finding literal in the library sources of every package (the web page's own findings excepted). */
function findingCodes(): Map<string, string> {
  const packages = join(import.meta.dirname, '..', '..');
  const found = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else if (/\.ts$/.test(e.name)) {
        for (const m of readFileSync(path, 'utf8').matchAll(/code: '([A-Za-z0-9]+)'/g)) found.set(m[1]!, path);
      }
    }
  };
  for (const pkg of readdirSync(packages)) {
    if (pkg === 'web') continue;
    try {
      walk(join(packages, pkg, 'src'));
    } catch {
      // a package without src/
    }
  }
  return found;
}

describe('WARNING_CODES', () => {
  it('every finding code in the sources is an error code or a listed warning code', () => {
    const errors = new Set<string>(ERROR_CODES);
    // EEXIST is an errno compared with, not a finding.
    const unlisted = [...findingCodes()].filter(([code]) => code !== 'EEXIST' && !errors.has(code) && !isWarningCode(code));
    expect(unlisted).toEqual([]);
  });

  it('is frozen, disjoint from the error codes, and says what each warning means', () => {
    expect(Object.isFrozen(WARNING_CODES)).toBe(true);
    for (const [code, meaning] of Object.entries(WARNING_CODES)) {
      expect((ERROR_CODES as readonly string[]).includes(code), code).toBe(false);
      expect(meaning.length, code).toBeGreaterThan(10);
    }
  });
});
