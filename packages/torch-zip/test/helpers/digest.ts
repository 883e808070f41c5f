import { createHash } from 'node:crypto';
import type { TensorDescriptor } from '@tensorport/core';

/** sha256 of a descriptor's streamed bytes, checking they add up to its byteLength. */
export async function digest(t: TensorDescriptor, chunkSize?: number): Promise<string> {
  const h = createHash('sha256');
  let n = 0;
  for await (const c of t.chunks(chunkSize)) {
    h.update(c);
    n += c.byteLength;
  }
  if (n !== t.byteLength) throw new Error(`${t.name}: streamed ${n} bytes, byteLength is ${t.byteLength}`);
  return h.digest('hex');
}
