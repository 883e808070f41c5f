import type { DType } from './dtype.ts';
import type { ByteSource } from './io/source.ts';

/**
 * What every reader yields and every writer consumes: a tensor described without its data.
 * Bytes are little-endian, C order, densely packed (the safetensors layout).
 */
export interface TensorDescriptor {
  readonly name: string;
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly byteLength: number;
  /**
   * Streams the tensor's bytes in chunks (each at most `chunkSize` bytes when the data is a plain
   * range). Called once per write; may be called again.
   */
  chunks(chunkSize?: number): AsyncIterable<Uint8Array>;
  /** Set when the bytes are a plain range of a byte source, so they can be copied or sliced lazily. */
  readonly range?: { readonly source: ByteSource; readonly offset: number };
  /**
   * Set when producing the bytes is mostly work outside the JavaScript thread (a deflated member
   * inflated on libuv's thread pool): a writer may start such a tensor while the one before it is
   * still being written (`tensorsInOrder`). Transforms that compute on the JS thread leave it unset.
   */
  readonly offThread?: boolean;
}

/** A loaded checkpoint: its tensors (in file order) and string metadata, nothing read yet. */
export interface Checkpoint {
  readonly format: string;
  readonly metadata: Map<string, string> | null;
  readonly tensors: readonly TensorDescriptor[];
  close(): Promise<void>;
}
