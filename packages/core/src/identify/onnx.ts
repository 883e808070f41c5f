/**
 * ONNX files have no magic number: they are a protobuf `ModelProto`. The heuristic walks the
 * top-level fields in the first bytes and accepts when
 *   - the first field is 1 (`ir_version`) as a varint (tag 0x08) with a value from 1 to 64,
 *   - every field seen before the window ends is a ModelProto field with its wire type
 *     (2 producer_name, 3 producer_version, 4 domain, 6 doc_string, 7 graph, 8 opset_import,
 *     14 metadata_props, 20 training_info, 25 functions, 26 configuration: length-delimited;
 *     5 model_version: varint), length-delimited lengths fit in the file,
 *   - and at least one of producer_name, graph or opset_import is among them.
 * onnx.save writes fields in number order, so ir_version comes first; random bytes starting
 * with 0x08 rarely survive the length checks.
 */
const LEN_FIELDS = new Set([2, 3, 4, 6, 7, 8, 14, 20, 25, 26]);
const VARINT_FIELDS = new Set([1, 5]);
const TELLING = new Set([2, 7, 8]);

interface Varint {
  value: number;
  next: number;
}

function readVarint(b: Uint8Array, at: number): Varint | null {
  let value = 0;
  let scale = 1;
  for (let i = at; i < b.length && i < at + 10; i++) {
    const byte = b[i]!;
    value += (byte & 0x7f) * scale;
    scale *= 128;
    if ((byte & 0x80) === 0) return { value, next: i + 1 };
  }
  return null;
}

export interface OnnxHint {
  irVersion: number;
  producer?: string;
}

export function looksLikeOnnx(head: Uint8Array, fileSize: number): OnnxHint | null {
  if (head[0] !== 0x08) return null;
  const ir = readVarint(head, 1);
  if (!ir || ir.value < 1 || ir.value > 64) return null;
  let at = ir.next;
  let telling = false;
  let producer: string | undefined;
  while (at < head.length) {
    const tag = readVarint(head, at);
    if (!tag) break;
    const field = Math.floor(tag.value / 8);
    const wire = tag.value & 7;
    if (wire === 0 && VARINT_FIELDS.has(field)) {
      const v = readVarint(head, tag.next);
      if (!v) break;
      at = v.next;
    } else if (wire === 2 && LEN_FIELDS.has(field)) {
      const len = readVarint(head, tag.next);
      if (!len || len.next + len.value > fileSize) return null;
      if (TELLING.has(field)) telling = true;
      if (field === 2 && len.next + len.value <= head.length) {
        producer = new TextDecoder('utf-8', { fatal: false }).decode(head.subarray(len.next, len.next + len.value));
      }
      at = len.next + len.value;
    } else {
      return null;
    }
  }
  if (!telling) return null;
  return producer === undefined ? { irVersion: ir.value } : { irVersion: ir.value, producer };
}
