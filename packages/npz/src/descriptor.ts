import { TensorportError, type ByteSource, type TensorDescriptor } from '@tensorport/core';
import type { NpyHeader } from './npy-header.ts';
import { byteswap, collect, fortranToC, rechunk, swapped, window } from './npy-data.ts';

/** Default cap on a Fortran-order tensor, which is transposed in memory (1 GiB). */
export const DEFAULT_MAX_FORTRAN_BYTES = 1024 * 1024 * 1024;

export interface ArraySource {
  /** The whole .npy (header included), possibly verified against a CRC once fully read. */
  stream(chunkSize?: number): AsyncIterable<Uint8Array>;
  /** Set when the .npy bytes are a plain range: the array bytes are then at `offset + dataOffset`. */
  range?: { source: ByteSource; offset: number };
  /** Set when streaming is mostly work off the JS thread (inflating on a thread pool). */
  offThread?: boolean;
}

/**
 * The descriptor of one array: C-order little-endian data is passed through (and exposes `range`
 * when stored as plain bytes); big-endian data is swapped while streaming; Fortran-order data is
 * transposed in memory, one tensor at a time, up to `maxFortranBytes`.
 */
export function arrayDescriptor(name: string, h: NpyHeader, src: ArraySource, maxFortranBytes: number): TensorDescriptor {
  const transpose = h.fortranOrder && h.shape.length > 1 && h.byteLength > 0;
  if (transpose && h.byteLength > maxFortranBytes) {
    throw new TensorportError('NpyFortranTooLarge', `${name}: Fortran-order array of ${h.byteLength} bytes is transposed in memory; the limit is ${maxFortranBytes} (option maxFortranBytes)`, { tensor: name });
  }
  const data = (chunkSize?: number) => window(src.stream(chunkSize), h.dataOffset, h.byteLength, name);
  const chunks = async function* (chunkSize?: number): AsyncGenerator<Uint8Array> {
    if (transpose) {
      let c = fortranToC(await collect(data(chunkSize), h.byteLength), h.shape, h.dtype);
      if (h.swap) c = swapped(c, h.swap);
      yield* rechunk([c], chunkSize);
    } else if (h.swap) yield* byteswap(rechunk(data(chunkSize), chunkSize), h.swap);
    else yield* rechunk(data(chunkSize), chunkSize);
  };
  const plain = !transpose && !h.swap && src.range;
  return {
    name,
    dtype: h.dtype,
    shape: h.shape,
    byteLength: h.byteLength,
    chunks,
    ...(plain ? { range: { source: src.range!.source, offset: src.range!.offset + h.dataOffset } } : {}),
    // a Fortran-order array is transposed here, on the JS thread, in memory
    ...(src.offThread && !transpose ? { offThread: true } : {}),
  };
}
