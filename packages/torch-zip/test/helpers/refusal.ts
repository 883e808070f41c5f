import { TensorportError } from '@tensorport/core';
import { expect } from 'vitest';

/** Runs `f`, which must throw a TensorportError; returns it for checks on code and message. */
export function refusal(f: () => unknown): TensorportError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(TensorportError);
    return e as TensorportError;
  }
  throw new Error('expected a refusal');
}
