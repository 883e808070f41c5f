import { crc32, type DeflateCodec } from '@tensorport/core';

type Fflate = typeof import('fflate');
let fflate: Promise<Fflate> | undefined;
/**
 * fflate is loaded on the first inflate or deflate, not with the package: Node callers pass
 * `nodeZlibCodec`, and loading fflate was 15 of the CLI's ~95 ms of start-up module loading
 * (issue 18), paid by every command, npz or not.
 */
const loadFflate = (): Promise<Fflate> => (fflate ??= import('fflate'));

/**
 * Compressed bytes fed to fflate's Inflate per push. fflate emits everything one push produces at
 * once and DEFLATE expands at most ~1032:1, so 64 KiB bounds one burst of output to ~66 MiB.
 * Measured (64 MiB, Node 20): 16 KiB pushes inflate at 32 MiB/s, 64 KiB at 71, 256 KiB at 160.
 */
const INFLATE_PUSH = 64 * 1024;
/** Deflate output never outgrows its input, so its pushes can be large (82 MiB/s at 1 MiB vs 39 at 64 KiB). */
const DEFLATE_PUSH = 1024 * 1024;

/**
 * Raw DEFLATE through fflate 0.8.3's streaming `Inflate`/`Deflate` (pure JS: browsers and workers).
 * Only these classes are used: fflate's ZIP layer cannot write ZIP64 and misreads numpy's ZIP64
 * archives (docs/formats/zip.md). In Node, `nodeZlibCodec` from `@tensorport/core/node` is ~2.5x
 * faster.
 */
export const fflateCodec: DeflateCodec = {
  name: 'fflate',
  inflateRaw(compressed) {
    return drive(compressed, INFLATE_PUSH, (f, emit) => new f.Inflate((data) => emit(data)));
  },
  deflateRaw(data, level = 6) {
    return drive(data, DEFLATE_PUSH, (f, emit) => new f.Deflate({ level: level as 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 }, (out) => emit(out)));
  },
  crc32,
};

interface Pushable {
  push(chunk: Uint8Array, final?: boolean): void;
}

async function* drive(input: AsyncIterable<Uint8Array>, push: number, make: (f: Fflate, emit: (b: Uint8Array) => void) => Pushable): AsyncGenerator<Uint8Array> {
  const ready: Uint8Array[] = [];
  const stream = make(await loadFflate(), (b) => {
    if (b.byteLength > 0) ready.push(b);
  });
  for await (const chunk of input) {
    for (let i = 0; i < chunk.byteLength; i += push) {
      stream.push(chunk.subarray(i, Math.min(i + push, chunk.byteLength)), false);
      while (ready.length > 0) yield ready.shift()!;
    }
  }
  stream.push(new Uint8Array(0), true);
  while (ready.length > 0) yield ready.shift()!;
}
