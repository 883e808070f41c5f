import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, TensorportError } from '@tensorport/core';

/** Every `new TensorportError('Code'` in the library sources of every package. */
function thrownCodes(): Map<string, string> {
  const packages = join(import.meta.dirname, '..', '..');
  const found = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else if (/\.ts$/.test(e.name)) {
        for (const m of readFileSync(path, 'utf8').matchAll(/new TensorportError\(\s*'([A-Za-z0-9]+)'/g)) found.set(m[1]!, path);
      }
    }
  };
  for (const pkg of readdirSync(packages)) {
    try {
      walk(join(packages, pkg, 'src'));
    } catch {
      // a package without src/ throws nothing
    }
  }
  return found;
}

describe('ERROR_CODES', () => {
  it('lists each code once', () => {
    expect(new Set(ERROR_CODES).size).toBe(ERROR_CODES.length);
    expect(ERROR_CODES.length).toBeGreaterThan(50);
  });

  it('holds every code the sources throw', () => {
    const thrown = thrownCodes();
    expect(thrown.size).toBeGreaterThan(50);
    const missing = [...thrown].filter(([code]) => !(ERROR_CODES as readonly string[]).includes(code));
    expect(missing).toEqual([]);
  });

  it('cannot be changed by a caller (one table for every package)', () => {
    expect(Object.isFrozen(ERROR_CODES)).toBe(true);
    expect(() => (ERROR_CODES as unknown as string[]).push('Invented')).toThrow(TypeError);
  });
});
