import type { TensorDescriptor } from '@tensorport/core';

type Extra = { ggmlType?: unknown; logicalShape?: readonly number[] };

/**
 * A copy of a descriptor's fields under another name (and without `range` when the bytes change).
 * Descriptors may be class instances with getters, so spreading them is not enough.
 */
export function redescribe<T extends TensorDescriptor>(d: T, name: string, chunks?: TensorDescriptor['chunks']): T {
  const x = d as TensorDescriptor & Extra;
  return {
    name,
    dtype: d.dtype,
    shape: d.shape,
    byteLength: d.byteLength,
    chunks: chunks ?? ((chunkSize?: number) => d.chunks(chunkSize)),
    ...(chunks === undefined && d.range ? { range: d.range } : {}),
    ...(x.ggmlType !== undefined ? { ggmlType: x.ggmlType, logicalShape: x.logicalShape } : {}),
  } as unknown as T;
}
