import { TensorportError, isTensorportError } from '../errors.ts';
import type { Crc32Fn, DeflateCodec } from './codec.ts';

export interface MemberCheck {
  readonly name: string;
  readonly uncompressedSize: number;
  readonly crc32: number;
  readonly dataOffset: number;
}

/**
 * Passes a member's bytes through while counting them and computing their CRC-32. More bytes than
 * declared is a bomb (stopped at the first chunk past the size, so memory stays at one chunk);
 * fewer is a size mismatch; the CRC is compared once the declared size is reached (skipped when
 * `crcFn` is null: the size bounds still apply).
 */
export async function* verifyMember(data: AsyncIterable<Uint8Array>, m: MemberCheck, crcFn: Crc32Fn | null): AsyncGenerator<Uint8Array> {
  let n = 0;
  let crc = 0;
  const where = { offset: m.dataOffset, tensor: m.name };
  for await (const chunk of data) {
    n += chunk.byteLength;
    if (n > m.uncompressedSize) {
      throw new TensorportError('ZipBomb', `member ${JSON.stringify(m.name)} inflates past its declared size of ${m.uncompressedSize} bytes`, where);
    }
    if (crcFn) crc = crcFn(chunk, crc);
    yield chunk;
  }
  if (n !== m.uncompressedSize) {
    throw new TensorportError('ZipSizeMismatch', `member ${JSON.stringify(m.name)} holds ${n} bytes but declares ${m.uncompressedSize}`, where);
  }
  if (crcFn && crc !== m.crc32) {
    throw new TensorportError('ZipCrcMismatch', `member ${JSON.stringify(m.name)} has CRC-32 0x${crc.toString(16).padStart(8, '0')}, the directory says 0x${m.crc32.toString(16).padStart(8, '0')}`, where);
  }
}

/** Inflates through `codec`, turning codec failures (corrupt or cut-short streams) into errors with a code. */
export async function* inflateMember(codec: DeflateCodec, compressed: AsyncIterable<Uint8Array>, m: MemberCheck): AsyncGenerator<Uint8Array> {
  try {
    yield* codec.inflateRaw(compressed);
  } catch (cause) {
    if (isTensorportError(cause)) throw cause;
    const why = cause instanceof Error ? cause.message : String(cause);
    throw new TensorportError('ZipInflateFailed', `member ${JSON.stringify(m.name)}: invalid DEFLATE data (${codec.name}: ${why})`, { offset: m.dataOffset, tensor: m.name, cause });
  }
}
