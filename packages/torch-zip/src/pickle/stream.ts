import { TensorportError, type ByteSource } from '@tensorport/core';
import { runPickle, type RunOptions, type RunResult } from './interpreter.ts';

/** 1 GiB: a data.pkl for 100 000 tensors is ~10 MB. */
export const DEFAULT_MAX_PICKLE_BYTES = 1 << 30;

export interface StreamOptions extends Omit<RunOptions, 'streaming' | 'baseOffset'> {
  maxPickleBytes?: number;
}

/**
 * Runs the pickle starting at `offset` of a source whose length is unknown (a legacy checkpoint is
 * pickles followed by raw storage bytes): a window that grows ×4 until STOP is inside it, so the
 * total re-reading stays within 4/3 of the pickle's size. `end` is absolute.
 */
export async function runPickleAt(source: ByteSource, offset: number, opts: StreamOptions): Promise<RunResult> {
  const max = opts.maxPickleBytes ?? DEFAULT_MAX_PICKLE_BYTES;
  const remaining = source.size - offset;
  let window = Math.min(remaining, 1 << 16, max);
  for (;;) {
    const bytes = await source.read(offset, window);
    const last = window === remaining;
    const r = runPickle(bytes, 0, { ...opts, streaming: !last, baseOffset: offset });
    if (!r.truncated) return { ...r, end: offset + r.end };
    if (window >= max) {
      throw new TensorportError('PickleLimitExceeded', `${opts.path ?? source.name}: pickle at offset ${offset} is longer than the limit of ${max} bytes`, { offset, path: opts.path ?? source.name });
    }
    window = Math.min(remaining, window * 4, max);
  }
}
