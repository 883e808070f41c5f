/**
 * Flax's `flax.serialization.to_bytes` (what transformers writes as `flax_model.msgpack`): a
 * msgpack map from parameter names to nested maps, arrays as msgpack extensions (ext type 1 holds
 * shape, dtype and bytes). Recognised by its first entry: a map header, a short string key, and a
 * value that is a map or an extension. A pickle's PROTO opcode is 0x80 followed by a small
 * protocol number, never a fixmap of one or more entries followed by a string.
 */
export function looksLikeFlaxMsgpack(head: Uint8Array): { entries: number; firstKey: string } | null {
  let i = 0;
  const b0 = head[i++];
  if (b0 === undefined) return null;
  let entries: number;
  if (b0 >= 0x81 && b0 <= 0x8f) entries = b0 & 0x0f;
  else if (b0 === 0xde && head.length >= 3) {
    entries = (head[1]! << 8) | head[2]!;
    i = 3;
  } else if (b0 === 0xdf && head.length >= 5) {
    entries = ((head[1]! << 24) | (head[2]! << 16) | (head[3]! << 8) | head[4]!) >>> 0;
    i = 5;
  } else return null;
  if (entries === 0) return null;
  const k = head[i++];
  let len: number;
  if (k !== undefined && k >= 0xa1 && k <= 0xbf) len = k & 0x1f;
  else if (k === 0xd9 && head[i] !== undefined) len = head[i++]!;
  else return null;
  if (len === 0 || i + len >= head.length) return null;
  const keyBytes = head.subarray(i, i + len);
  // parameter names: printable text, no control characters
  if (keyBytes.some((c) => c < 0x20 || c === 0x7f)) return null;
  const v = head[i + len]!;
  const isMap = (v >= 0x80 && v <= 0x8f) || v === 0xde || v === 0xdf;
  const isExt = (v >= 0xd4 && v <= 0xd8) || v === 0xc7 || v === 0xc8 || v === 0xc9;
  if (!isMap && !isExt) return null;
  return { entries, firstKey: new TextDecoder('utf-8', { fatal: false }).decode(keyBytes) };
}
