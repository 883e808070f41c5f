import { crc32 } from './crc32.ts';

/**
 * Raw DEFLATE (RFC 1951: no zlib or gzip wrapper), injected so the core stays free of `node:`
 * imports: `nodeZlibCodec` from `@tensorport/core/node` in Node, `fflateCodec` from
 * `@tensorport/npz` anywhere (browser workers included).
 *
 * Both directions are pull-driven streams: the consumer's pace bounds memory, and a consumer that
 * stops iterating (a bomb guard firing) must make the codec stop pulling input and release it.
 */
export interface DeflateCodec {
  readonly name: string;
  /** True when inflating runs outside the JavaScript thread (node:zlib on libuv's thread pool). */
  readonly offThread?: boolean;
  inflateRaw(compressed: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array>;
  /** `level` follows zlib (0–9); numpy's zipfile uses 6. */
  deflateRaw(data: AsyncIterable<Uint8Array>, level?: number): AsyncIterable<Uint8Array>;
  /** A faster CRC-32 than the portable one (same contract as `crc32`). */
  crc32?(data: Uint8Array, crc: number): number;
}

export type Crc32Fn = (data: Uint8Array, crc: number) => number;

export function crcOf(codec: DeflateCodec | undefined): Crc32Fn {
  return codec?.crc32 ? codec.crc32.bind(codec) : crc32;
}
