import { setChunkLender, setChunkRecycler } from '../io/recycle.ts';

/**
 * Reused read buffers. A fresh 4 MiB buffer per chunk costs a page fault per 4 KiB page on first
 * touch (61k minor faults for a 1 GiB copy, measured) and an munmap when the GC frees it; buffers
 * that go round source → sink → source are faulted in once.
 *
 * Ownership: `lend` hands a buffer to a FileSource read, whose caller owns it. Only a sink that was
 * given the chunk with `writeOwned` (the caller promises never to touch it again) gives it back,
 * after its write finished; so does diff (through io/recycle.ts, installed at the end of this file)
 * once it compared a chunk. HttpSource range bodies come from here too (io/recycle.ts lendChunk).
 * A lent buffer nobody gives back is simply collected by the GC.
 */
const free = new Map<number, Uint8Array[]>();
const lent = new WeakSet<ArrayBuffer>();
/** Below this, allocation is cheap and reads are headers or small tensors: not pooled. */
export const POOLED_MIN = 256 * 1024;
/** Bytes kept for reuse (all sizes): read-ahead, one chunk being written, one being filled, with room. */
const KEEP_BYTES = 48 * 1024 * 1024;
let kept = 0;

export function lend(length: number): Uint8Array {
  let buf: Uint8Array | undefined;
  if (length >= POOLED_MIN) {
    buf = free.get(length)?.pop();
    if (buf) kept -= length;
  }
  buf ??= pageAligned(length);
  if (length >= POOLED_MIN) lent.add(buf.buffer as ArrayBuffer);
  return buf;
}

/** True for a whole buffer from `lend` that nobody gave back yet. */
export function isLent(chunk: Uint8Array): boolean {
  return chunk.byteOffset === 0 && chunk.byteLength === chunk.buffer.byteLength && lent.has(chunk.buffer as ArrayBuffer);
}

/** Takes back a buffer from `lend`; anything else (a view, a foreign buffer, a second return) is ignored. */
export function giveBack(chunk: Uint8Array): void {
  if (!isLent(chunk)) return;
  lent.delete(chunk.buffer as ArrayBuffer);
  if (kept + chunk.byteLength > KEEP_BYTES) return;
  kept += chunk.byteLength;
  const list = free.get(chunk.byteLength);
  if (list) list.push(chunk);
  else free.set(chunk.byteLength, [chunk]);
}

/** Buffers of `length` bytes waiting in the pool (for tests: what came back). */
export function pooledCount(length: number): number {
  return free.get(length)?.length ?? 0;
}

/**
 * A buffer of its own (not Node's shared pool) whose first byte starts a page. The kernel copies a
 * read or write faster from an aligned buffer: 2 GiB of pread and pwrite through one 4 MiB buffer took
 * 0.28 + 0.28 s from a malloc'd one (16 bytes past a 32-byte boundary) and 0.12 + 0.19 s from an
 * aligned one, as dd's is (bench/io-levers.mjs; docs/benchmarks.md, round 9). Node's Buffers and plain ArrayBuffers
 * come from malloc; a resizable ArrayBuffer is reserved in whole pages by V8, so it is made with a
 * maximum equal to its length, and never resized.
 */
export function pageAligned(length: number): Uint8Array {
  if (length < ALIGN_MIN) return new Uint8Array(length);
  return new Uint8Array(new ResizableArrayBuffer(length, { maxByteLength: length }), 0, length);
}

/** The page that `pageAligned` buffers start, and that placed buffers mirror file positions in. */
export const PAGE = 4096;

/**
 * Whether a copy between a page-aligned buffer and a file position `distance` bytes past it (mod
 * PAGE: the file offset for a write, minus it for a read) is one the kernel runs 2-6× slower:
 * 1-31 bytes. 2 GiB took 0.68 s of pread and 0.28-0.72 s of pwrite there, 0.11 and 0.18 s at 0
 * (bench/io-levers.mjs); a memory copy into a buffer placed like the file costs less. Further
 * off a 32-byte boundary the write costs 0.27 s, about what that copy would, so it is left as it is.
 */
export function misplaced(distance: number): boolean {
  const d = ((distance % PAGE) + PAGE) % PAGE;
  return d > 0 && d < 32;
}

/** Below a page, alignment saves nothing and a page per buffer would waste most of it. */
const ALIGN_MIN = 64 * 1024;

/** ES2024's ArrayBuffer constructor, not in the ES2022 lib this package is typed against. */
const ResizableArrayBuffer = ArrayBuffer as unknown as new (length: number, options: { maxByteLength: number }) => ArrayBuffer;

setChunkRecycler(giveBack);
setChunkLender(lend);
