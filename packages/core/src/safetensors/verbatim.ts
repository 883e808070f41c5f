import { readChunks, type ByteSource } from '../io/source.ts';
import type { TensorDescriptor } from '../tensor.ts';
import { bytesEqual } from '../zip/le.ts';

/** The parts of a SafetensorsPlan (writer.ts) this needs. */
interface Layout {
  readonly header: Uint8Array;
  readonly begins: Float64Array;
  readonly dataLength: number;
}

/**
 * The source whose bytes are, all of them and in order, the file `plan` describes: every tensor a
 * plain range of that one source, at the offset the plan puts it, the source no longer than
 * header + data, and its first bytes this very header. Such a write (a safetensors file rewritten
 * as it is, a shard re-written whole) is a copy of the source, which a file sink can make in the
 * kernel. Reads only the source's header; null as soon as anything differs.
 */
export async function verbatimSource(plan: Layout, tensors: readonly TensorDescriptor[]): Promise<ByteSource | null> {
  const source = tensors[0]?.range?.source;
  if (!source?.copyWholeTo || source.size !== plan.header.byteLength + plan.dataLength) return null;
  for (const [i, t] of tensors.entries()) {
    if (t.range?.source !== source || t.range.offset !== plan.header.byteLength + plan.begins[i]!) return null;
  }
  let at = 0;
  for await (const chunk of readChunks(source, 0, plan.header.byteLength)) {
    if (!bytesEqual(chunk, plan.header.subarray(at, at + chunk.byteLength))) return null;
    at += chunk.byteLength;
  }
  return source;
}
