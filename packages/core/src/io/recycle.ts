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
