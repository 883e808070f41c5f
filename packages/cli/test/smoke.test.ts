import { expect, it } from 'vitest';
import { VERSION } from '../src/index.ts';

it('has a version', () => {
  expect(VERSION).toMatch(/^\d+\.\d+\.\d+$/);
});
