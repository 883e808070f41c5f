import { Deflate, Inflate } from 'fflate';
import { crc32, type DeflateCodec } from '@tensorport/core';

/**
 * Input slice fed to fflate per push. fflate emits everything one push produces at once, and
 * DEFLATE expands at most ~1032:1, so 16 KiB in bounds one burst of output to ~16 MiB.
 */
const PUSH = 16 * 1024;

/**
 * Raw DEFLATE through fflate 0.8.3's streaming `Inflate`/`Deflate` (pure JS: browsers and workers).
 * Only these classes are used: fflate's ZIP layer cannot write ZIP64 and misreads numpy's ZIP64
 * archives (docs/formats/zip.md). In Node, `nodeZlibCodec` from `@tensorport/core/node` is ~2.5x
 * faster.
 */
export const fflateCodec: DeflateCodec = {
  name: 'fflate',
  inflateRaw(compressed) {
    return drive(compressed, (emit) => new Inflate((data) => emit(data)));
  },
  deflateRaw(data, level = 6) {
    return drive(data, (emit) => new Deflate({ level: level as 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 }, (out) => emit(out)));
  },
  crc32,
};

interface Pushable {
  push(chunk: Uint8Array, final?: boolean): void;
}

async function* drive(input: AsyncIterable<Uint8Array>, make: (emit: (b: Uint8Array) => void) => Pushable): AsyncGenerator<Uint8Array> {
  const ready: Uint8Array[] = [];
  const stream = make((b) => {
    if (b.byteLength > 0) ready.push(b);
  });
  for await (const chunk of input) {
    for (let i = 0; i < chunk.byteLength; i += PUSH) {
      stream.push(chunk.subarray(i, Math.min(i + PUSH, chunk.byteLength)), false);
      while (ready.length > 0) yield ready.shift()!;
    }
  }
  stream.push(new Uint8Array(0), true);
  while (ready.length > 0) yield ready.shift()!;
}
