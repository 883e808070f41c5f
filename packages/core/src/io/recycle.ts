/**
 * Where a consumer that is done with a chunk it owns may give it back, so the next read reuses the
 * buffer instead of faulting in a fresh one. The Node entry installs its read buffer pool here
 * (node/buffer-pool.ts); elsewhere (browser, memory sources) this does nothing. Only for chunks the
 * caller owns outright and will not touch again.
 */
let recycler: ((chunk: Uint8Array) => void) | null = null;

export function setChunkRecycler(fn: ((chunk: Uint8Array) => void) | null): void {
  recycler = fn;
}

export function recycleChunk(chunk: Uint8Array): void {
  recycler?.(chunk);
}

/**
 * Where a producer of whole chunks (an HTTP range body) gets its buffer: the Node entry installs
 * the same pool (node/buffer-pool.ts), so the chunk can travel source → FileSink.writeOwned → pool
 * like a file read does, instead of faulting in fresh pages for every request; elsewhere a plain
 * new buffer. The contents are not zeroed: the producer must fill all of it or hand out only the
 * part it filled.
 */
let lender: ((length: number) => Uint8Array) | null = null;

export function setChunkLender(fn: ((length: number) => Uint8Array) | null): void {
  lender = fn;
}

export function lendChunk(length: number): Uint8Array {
  return lender ? lender(length) : new Uint8Array(length);
}
