import type { ByteSource } from '@tensorport/core';
import { runPickle, type RunOptions, type RunResult } from './interpreter.ts';

/** 1 GiB: a data.pkl for 100 000 tensors is ~10 MB. */
export const DEFAULT_MAX_PICKLE_BYTES = 1 << 30;

export interface StreamOptions extends Omit<RunOptions, 'streamLength' | 'streamCapped' | 'baseOffset'> {
  maxPickleBytes?: number;
}

/**
 * Runs the pickle starting at `offset` of a source whose length is unknown (a legacy checkpoint is
 * pickles followed by raw storage bytes): a window that grows ×4 until STOP is inside it, so the
 * total re-reading stays within 4/3 of the pickle's size. A length past the end of the source (or
 * past `maxPickleBytes`) fails at once, without growing the window. `end` is absolute.
 */
export async function runPickleAt(source: ByteSource, offset: number, opts: StreamOptions): Promise<RunResult> {
  const max = opts.maxPickleBytes ?? DEFAULT_MAX_PICKLE_BYTES;
  const streamLength = Math.min(source.size - offset, max);
  const streamCapped = source.size - offset > max;
  let window = Math.min(streamLength, 1 << 16);
  for (;;) {
    const bytes = await source.read(offset, window);
    const r = runPickle(bytes, 0, { ...opts, streamLength, streamCapped, baseOffset: offset });
    if (!r.truncated) return { ...r, end: offset + r.end };
    window = Math.min(streamLength, window * 4);
  }
}
