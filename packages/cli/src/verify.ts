import { TensorportError, diffCheckpoints, type TensorDescriptor } from '@tensorport/core';
import type { FormatHandler, OpenOptions } from './formats/registry.ts';

/**
 * `convert --verify`: the written output, opened by its own reader, diffed value by value
 * (bit-exact, streaming) against the tensors that were written (the input, cast when --dtype).
 * Catches what validation cannot: right structure, wrong bytes.
 */
export async function verifyContent(writer: FormatHandler, output: string, tensors: readonly TensorDescriptor[], readBack: OpenOptions, onProgress?: (done: number, total: number) => void): Promise<void> {
  const back = await writer.open(output, readBack);
  try {
    const r = await diffCheckpoints({ tensors, metadata: null }, back, onProgress ? { onProgress } : {});
    if (r.equal) return;
    const first = r.changed[0];
    const what = first
      ? `tensor ${JSON.stringify(first.name)} differs (${first.reason}${first.mismatches === undefined ? '' : `, ${first.mismatches} element(s)`})`
      : `${r.onlyInA.length} tensor(s) missing, ${r.onlyInB.length} unexpected`;
    throw new TensorportError('VerifyMismatch', `reading ${output} back does not give the input's values: ${what}`, {
      path: output,
      ...(first ? { tensor: first.name } : {}),
    });
  } finally {
    await back.close();
  }
}
