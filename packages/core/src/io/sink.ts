import type { ByteSource } from './source.ts';

/**
 * Where a writer puts bytes, strictly in order. A sink is all-or-nothing: `commit` makes the
 * output visible (a file sink renames its temp file onto the target), `abort` discards it.
 */
export interface ByteSink {
  readonly name: string;
  write(chunk: Uint8Array): Promise<void>;
  /**
   * Optional: `write` of a chunk the caller gives up (it and its producer never touch it again), so
   * the sink may keep it instead of copying it. Writers call it through `writeChunk`.
   */
  writeOwned?(chunk: Uint8Array): Promise<void>;
  /**
   * Optional: makes a sink nothing has been written to hold exactly `source`'s bytes by an
   * in-kernel copy (a file sink over a source with `copyWholeTo`). False when it cannot; the sink
   * is then still empty and the caller streams the bytes instead.
   */
  copyWhole?(source: ByteSource): Promise<boolean>;
  commit(): Promise<void>;
  abort(): Promise<void>;
  readonly bytesWritten: number;
  /**
   * Optional two-phase commit for multi-file outputs (writeAllOrNothing): `prepare` makes every
   * byte durable without making the file visible, so a full disk fails before anything is
   * published; `revert` undoes a `commit` made after it (removes the file, or puts back the one it
   * replaced); `finish` is called on every sink once the whole group is committed or rolled back.
   * Sinks without them (MemorySink) publish nothing visible before commit anyway.
   */
  prepare?(): Promise<void>;
  revert?(): Promise<void>;
  finish?(): Promise<void>;
}

/** Collects everything in memory; `bytes()` after commit. For tests and the browser. */
export class MemorySink implements ByteSink {
  bytesWritten = 0;
  private chunks: Uint8Array[] = [];
  private result: Uint8Array | null = null;
  constructor(readonly name = '<memory>') {}
  async write(chunk: Uint8Array): Promise<void> {
    // Copy: callers may reuse their buffers.
    this.chunks.push(chunk.slice());
    this.bytesWritten += chunk.byteLength;
  }
  async commit(): Promise<void> {
    const out = new Uint8Array(this.bytesWritten);
    let pos = 0;
    for (const c of this.chunks) {
      out.set(c, pos);
      pos += c.byteLength;
    }
    this.chunks = [];
    this.result = out;
  }
  async abort(): Promise<void> {
    this.chunks = [];
  }
  bytes(): Uint8Array {
    if (!this.result) throw new Error('MemorySink.bytes() before commit()');
    return this.result;
  }
}

/**
 * Writes a tensor chunk a writer got from `exactChunks` and does not use again. Readers yield fresh
 * buffers per chunk (FileSource reads), so the sink may take them over; sinks decide which they can
 * take without a copy (FileSink: only its own read buffers) and copy the rest.
 */
export function writeChunk(sink: ByteSink, chunk: Uint8Array): Promise<void> {
  return sink.writeOwned ? sink.writeOwned(chunk) : sink.write(chunk);
}
