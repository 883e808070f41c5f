import { TensorportError } from './errors.ts';
import type { TensorDescriptor } from './tensor.ts';

/**
 * A descriptor's chunks, held to its declared byteLength: a writer has already promised that size
 * (in a header, a ZIP entry, a pickle), so a source that streams more or fewer bytes must fail the
 * write rather than shift every later tensor. Stops reading as soon as it has too much.
 */
export async function* exactChunks(t: TensorDescriptor, chunkSize?: number): AsyncGenerator<Uint8Array> {
  let n = 0;
  for await (const c of t.chunks(chunkSize)) {
    n += c.byteLength;
    if (n > t.byteLength) break;
    yield c;
  }
  if (n !== t.byteLength) {
    throw new TensorportError(
      'TensorByteLengthMismatch',
      `tensor ${JSON.stringify(t.name)} streamed ${n > t.byteLength ? 'more than' : n} bytes, expected ${t.byteLength}`,
      { tensor: t.name },
    );
  }
}
