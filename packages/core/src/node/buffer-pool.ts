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
  // Own ArrayBuffer (not Node's shared pool), and a plain Uint8Array: Buffer#slice would alias.
  buf ??= new Uint8Array(Buffer.allocUnsafeSlow(length).buffer, 0, length);
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

setChunkRecycler(giveBack);
setChunkLender(lend);
