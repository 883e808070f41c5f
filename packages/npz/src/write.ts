import { exactChunks, TensorportError, ZipWriter, type ByteSink, type DeflateCodec, type Finding, type TensorDescriptor } from '@tensorport/core';
import { fflateCodec } from './fflate-codec.ts';
import { formatNpyHeader } from './npy-header.ts';

export interface NpzWriteOptions {
  /** Deflate members (np.savez_compressed); default stored (np.savez). */
  compress?: boolean;
  /** Raw DEFLATE for `compress` and a CRC-32 (default fflate; `nodeZlibCodec` in Node). */
  codec?: DeflateCodec;
  /** Force data descriptors even when the sink can patch local headers. */
  dataDescriptors?: boolean;
}

export interface NpyWriteResult {
  readonly bytesWritten: number;
  readonly warnings: readonly Finding[];
}

async function* npyBytes(t: TensorDescriptor, warn: (f: Finding) => void): AsyncGenerator<Uint8Array> {
  yield formatNpyHeader(t.dtype, t.shape, t.name, warn);
  yield* exactChunks(t);
}

/** Runs `body`, then commits the sink; aborts it (no partial output) if anything fails. */
async function committed(sink: ByteSink, body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (e) {
    await sink.abort();
    throw e;
  }
  await sink.commit();
}

/** Writes one tensor as a .npy laid out byte for byte as np.save does, then commits the sink. */
export async function writeNpy(tensor: TensorDescriptor, sink: ByteSink): Promise<NpyWriteResult> {
  const warnings: Finding[] = [];
  await committed(sink, async () => {
    for await (const c of npyBytes(tensor, (f) => warnings.push(f))) await sink.write(c);
  });
  return { bytesWritten: sink.bytesWritten, warnings };
}

/**
 * Writes tensors as an .npz (`<name>.npy` members, in order) laid out as np.savez /
 * np.savez_compressed do, then commits the sink. ZIP64 is used wherever sizes or offsets need it.
 */
export async function writeNpz(tensors: Iterable<TensorDescriptor> | AsyncIterable<TensorDescriptor>, sink: ByteSink, options: NpzWriteOptions = {}): Promise<NpyWriteResult> {
  const warnings: Finding[] = [];
  const codec = options.codec ?? fflateCodec;
  await committed(sink, async () => {
    const zip = new ZipWriter(sink, { codec, ...(options.dataDescriptors ? { dataDescriptors: true } : {}) });
    const names = new Set<string>();
    for await (const t of tensors) {
      if (names.has(t.name)) throw new TensorportError('DuplicateTensorName', `tensor ${JSON.stringify(t.name)} written twice`, { tensor: t.name });
      names.add(t.name);
      await zip.add(`${t.name}.npy`, npyBytes(t, (f) => warnings.push(f)), { deflate: options.compress === true });
    }
    await zip.finish();
  });
  return { bytesWritten: sink.bytesWritten, warnings };
}
