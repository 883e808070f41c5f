import { describe, expect, it } from 'vitest';
import { ERROR_CODES, WARNING_CODES, isWarningCode } from '@tensorport/core';
import { capturesInSources } from './helpers/source-scan.ts';

/** Every `code: 'X'` finding literal in the library sources of every package (the web page's own findings excepted). */
const findingCodes = (): Map<string, string> => capturesInSources(/code: '([A-Za-z0-9]+)'/g, { skipPackages: ['web'] });

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
