import { describe, expect, it } from 'vitest';
import { ERROR_CODES, TensorportError } from '@tensorport/core';
import { capturesInSources } from './helpers/source-scan.ts';

/** Every `new TensorportError('Code'` in the library sources of every package. */
const thrownCodes = (): Map<string, string> => capturesInSources(/new TensorportError\(\s*'([A-Za-z0-9]+)'/g);

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
