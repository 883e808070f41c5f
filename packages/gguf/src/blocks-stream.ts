import { DEFAULT_CHUNK, exactChunks, type TensorDescriptor } from '@tensorport/core';

/**
 * Streams `desc` through `map`, `inBytes` → `outBytes` per unit (a block, or an element), calling
 * `map` on whole units only: source chunks may split units anywhere. Memory: one staging buffer
 * of input and the output chunk, each at most `chunkSize` bytes (or one unit, if larger).
 */
export async function* mapUnits(
  desc: TensorDescriptor,
  inBytes: number,
  outBytes: number,
  map: (src: Uint8Array, units: number) => Uint8Array,
  chunkSize = DEFAULT_CHUNK,
): AsyncGenerator<Uint8Array> {
  // Sized by the larger side, so neither the staging input nor the output outgrows a chunk.
  const perChunk = Math.max(1, Math.floor(chunkSize / Math.max(inBytes, outBytes)));
  const inChunk = perChunk * inBytes;
  // Own buffer: kernels may view it as aligned typed arrays.
  const staging = new Uint8Array(inChunk);
  let filled = 0;
  for await (const chunk of exactChunks(desc, inChunk)) {
    let pos = 0;
    while (pos < chunk.byteLength) {
      const take = Math.min(inChunk - filled, chunk.byteLength - pos);
      staging.set(chunk.subarray(pos, pos + take), filled);
      filled += take;
      pos += take;
      if (filled === inChunk) {
        yield map(staging, perChunk);
        filled = 0;
      }
    }
  }
  if (filled > 0) yield map(staging.subarray(0, filled), filled / inBytes);
}
