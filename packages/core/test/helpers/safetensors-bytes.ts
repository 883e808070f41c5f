/** Builds raw safetensors bytes for reader/validator tests: exact control over every byte. */

const enc = new TextEncoder();

/** `[u64 LE N][header][data]`; `n` overrides the declared N. Header given as text or bytes. */
export function stBytes(header: string | Uint8Array, data: Uint8Array | number = 0, n?: number | bigint): Uint8Array {
  const h = typeof header === 'string' ? enc.encode(header) : header;
  const d = typeof data === 'number' ? new Uint8Array(data) : data;
  const out = new Uint8Array(8 + h.length + d.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(n ?? h.length), true);
  out.set(h, 8);
  out.set(d, 8 + h.length);
  return out;
}

/** One entry's JSON, in the reference writer's field order. */
export function entry(dtype: string, shape: (number | bigint | string)[], begin: number | bigint | string, end: number | bigint | string): string {
  return `{"dtype":"${dtype}","shape":[${shape.join(',')}],"data_offsets":[${begin},${end}]}`;
}

/** A valid file from (name, dtype, shape, byteLength) tuples, laid out contiguously in order. */
export function validFile(tensors: [string, string, number[], number][], metadata?: Record<string, string>): Uint8Array {
  const parts: string[] = [];
  if (metadata) parts.push(`"__metadata__":${JSON.stringify(metadata)}`);
  let pos = 0;
  for (const [name, dtype, shape, len] of tensors) {
    parts.push(`${JSON.stringify(name)}:${entry(dtype, shape, pos, pos + len)}`);
    pos += len;
  }
  let header = `{${parts.join(',')}}`;
  const pad = (8 - (enc.encode(header).length % 8)) % 8;
  header += ' '.repeat(pad);
  const data = new Uint8Array(pos);
  for (let i = 0; i < pos; i++) data[i] = (i * 7 + 3) & 0xff;
  return stBytes(header, data);
}
