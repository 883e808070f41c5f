import { TensorportError } from '@tensorport/core';

/** The TensorportError code a promise (or a call) fails with, 'no error' when it succeeds; any other exception is rethrown. */
export async function codeOf(p: Promise<unknown> | (() => unknown)): Promise<string> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    if (e instanceof TensorportError) return e.code;
    throw e;
  }
  return 'no error';
}
