/**
 * MLX packs quantized codes so that every row is one little-endian, LSB-first bit stream: code i
 * occupies stream bits [i*bits, (i+1)*bits), and stream bit p is bit p%32 of uint32 word p/32.
 * For 3, 5 and 6 bits a code straddles byte and word boundaries. A row (a whole number of groups)
 * always ends on a word boundary, so a block of rows is itself one stream: these functions work on
 * any run of codes whose bit length is a multiple of 32.
 */
import { TensorportError } from '@tensorport/core';

export function checkStream(count: number, bits: number): number {
  if (!Number.isInteger(bits) || bits < 1 || bits > 8) {
    throw new TensorportError('MlxUnsupportedQuantization', `cannot pack ${bits}-bit codes (1 to 8 bits)`);
  }
  if ((count * bits) % 32 !== 0) {
    throw new TensorportError('MlxInvalidQuantization', `${count} codes of ${bits} bits are not a whole number of uint32 words`);
  }
  return (count * bits) / 32;
}

/** Packs `codes` (each < 2^bits) into uint32 words. */
export function packCodes(codes: ArrayLike<number>, bits: number, out?: Uint32Array): Uint32Array {
  const words = checkStream(codes.length, bits);
  const dst = out ?? new Uint32Array(words);
  if (dst.length < words) throw new RangeError('output too small');
  dst.fill(0, 0, words);
  const mask = (1 << bits) - 1;
  if (32 % bits === 0) {
    const per = 32 / bits;
    for (let w = 0, i = 0; w < words; w++) {
      let word = 0;
      for (let k = 0; k < per; k++, i++) word |= (codes[i]! & mask) << (k * bits);
      dst[w] = word;
    }
    return dst;
  }
  for (let i = 0, p = 0; i < codes.length; i++, p += bits) {
    const c = codes[i]! & mask;
    const w = p >>> 5;
    const off = p & 31;
    dst[w] = dst[w]! | (c << off);
    if (off + bits > 32) dst[w + 1] = dst[w + 1]! | (c >>> (32 - off));
  }
  return dst;
}

/** Unpacks `count` codes from uint32 words. */
export function unpackCodes(words: Uint32Array, bits: number, count: number, out?: Uint8Array): Uint8Array {
  const need = checkStream(count, bits);
  if (words.length < need) throw new RangeError('not enough words');
  const dst = out ?? new Uint8Array(count);
  const mask = (1 << bits) - 1;
  if (32 % bits === 0) {
    const per = 32 / bits;
    for (let w = 0, i = 0; w < need; w++) {
      const word = words[w]!;
      for (let k = 0; k < per; k++, i++) dst[i] = (word >>> (k * bits)) & mask;
    }
    return dst;
  }
  for (let i = 0, p = 0; i < count; i++, p += bits) {
    const w = p >>> 5;
    const off = p & 31;
    let v = words[w]! >>> off;
    if (off + bits > 32) v |= words[w + 1]! << (32 - off);
    dst[i] = v & mask;
  }
  return dst;
}
