import { describe, expect, it } from 'vitest';
import { byteLength, DTYPES, dtypeBits } from '../src/index.ts';

describe('dtypes', () => {
  it('has the 22 reference dtypes', () => {
    expect(DTYPES.length).toBe(22);
    expect(dtypeBits('F6_E2M3')).toBe(6);
  });
  it('requires whole bytes', () => {
    expect(byteLength('F4', [1, 2])).toBe(1);
    expect(() => byteLength('F4', [3])).toThrow(/whole number of bytes/);
  });
});
