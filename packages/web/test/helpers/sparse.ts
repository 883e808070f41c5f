import { open } from 'node:fs/promises';

/**
 * A safetensors file of exactly `size` bytes whose data section is a hole: the header is written,
 * then the file is extended with ftruncate, so 100 GB cost a few hundred KB of disk.
 * `count` F32 tensors share the data evenly (the last takes the remainder).
 */
export async function writeSparseSafetensors(path: string, size: number, count: number): Promise<{ headerLength: number; names: string[] }> {
  const names = Array.from({ length: count }, (_, i) => `model.layers.${Math.floor(i / 10)}.block.w${i % 10}.weight`);
  // Offsets have at most as many digits as `size`; reserve room for them, then pad with spaces.
  const longest = JSON.stringify(Object.fromEntries(names.map((n) => [n, { dtype: 'F32', shape: [size], data_offsets: [size, size] }])));
  const headerLength = Math.ceil((longest.length + 64) / 8) * 8;
  const data = size - 8 - headerLength;
  if (data % 4 !== 0) throw new Error('size must leave a multiple of 4 data bytes');
  const elements = data / 4;
  const each = Math.floor(elements / count);
  const header: Record<string, unknown> = { __metadata__: { format: 'pt', note: 'sparse test file' } };
  let offset = 0;
  names.forEach((n, i) => {
    const k = i === count - 1 ? elements - each * (count - 1) : each;
    header[n] = { dtype: 'F32', shape: [k], data_offsets: [offset, offset + 4 * k] };
    offset += 4 * k;
  });
  const json = Buffer.from(JSON.stringify(header).padEnd(headerLength, ' '));
  if (json.length !== headerLength) throw new Error('header outgrew its reservation');
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(headerLength));
  const fh = await open(path, 'w');
  try {
    await fh.write(Buffer.concat([prefix, json]), 0, 8 + headerLength, 0);
    await fh.truncate(size);
  } finally {
    await fh.close();
  }
  return { headerLength, names };
}
