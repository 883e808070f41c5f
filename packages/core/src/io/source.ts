import { TensorportError } from '../errors.ts';

/**
 * A positional, read-only view of bytes: a file, a Blob, or memory. Offsets are plain numbers:
 * exact up to 2^53 bytes (8 PiB), far beyond any checkpoint.
 * `read` returns exactly `length` bytes or throws; it never reads past `size`.
 */
export interface ByteSource {
  readonly size: number;
  /** Shown in messages; a file path or a File's name. */
  readonly name: string;
  /**
   * `until` (optional) is where the sequential stream this read belongs to ends (readChunks passes
   * its range's end): a source that reads ahead reads no further, so a stream that stops at a
   * member's or tensor's end does not cost the chunks after it. A read without it is a one-off (a
   * header, a pickle): nothing is read ahead of it. Sources without read-ahead ignore it.
   */
  read(offset: number, length: number, until?: number): Promise<Uint8Array>;
  close(): Promise<void>;
  /** Counts bytes actually read, so tools can say "read 12 KB of 100 GB". */
  readonly bytesRead: number;
  /**
   * Optional, for a source that is a whole local file (Node's FileSource, and wrappers of one that
   * forward it): copies all `size` bytes into a new file `path` (which must not exist) inside the
   * kernel (no pass through this process) and says whether what landed there is what `read` would
   * have returned. False (anything may then be in `path`) when that cannot be made sure of.
   */
  copyWholeTo?(path: string): Promise<boolean>;
}

export function checkRange(source: { size: number; name: string }, offset: number, length: number): void {
  if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < 0 || length < 0 || offset + length > source.size) {
    throw new TensorportError(
      'ReadOutOfBounds',
      `read of ${length} bytes at offset ${offset} is outside ${source.name} (${source.size} bytes)`,
      { offset, path: source.name },
    );
  }
}

export class BytesSource implements ByteSource {
  readonly size: number;
  bytesRead = 0;
  constructor(
    private readonly bytes: Uint8Array,
    readonly name = '<memory>',
  ) {
    this.size = bytes.byteLength;
  }
  async read(offset: number, length: number): Promise<Uint8Array> {
    checkRange(this, offset, length);
    this.bytesRead += length;
    return this.bytes.subarray(offset, offset + length);
  }
  async close(): Promise<void> {}
}

/** `Blob`/`File` (browser or Node ≥ 20): each read is one `slice().arrayBuffer()`. */
export class BlobSource implements ByteSource {
  readonly size: number;
  readonly name: string;
  bytesRead = 0;
  constructor(private readonly blob: Blob, name?: string) {
    this.size = blob.size;
    this.name = name ?? ((blob as { name?: string }).name || '<blob>');
  }
  async read(offset: number, length: number): Promise<Uint8Array> {
    checkRange(this, offset, length);
    const buf = new Uint8Array(await this.blob.slice(offset, offset + length).arrayBuffer());
    if (buf.byteLength !== length) {
      throw new TensorportError('ShortRead', `${this.name}: expected ${length} bytes at ${offset}, got ${buf.byteLength}`, { offset, path: this.name });
    }
    this.bytesRead += length;
    return buf;
  }
  async close(): Promise<void> {}
}

/** A window [start, start+size) of another source; used for shards and stored ZIP members. */
export class SliceSource implements ByteSource {
  constructor(
    protected readonly parent: ByteSource,
    private readonly start: number,
    readonly size: number,
    private readonly label = parent.name,
  ) {
    checkRange(parent, start, size);
  }
  get name(): string {
    return this.label;
  }
  /** The source this is ultimately a window of, and where the window starts in it. */
  origin(): { source: ByteSource; offset: number } {
    const up = this.parent instanceof SliceSource ? this.parent.origin() : { source: this.parent, offset: 0 };
    return { source: up.source, offset: up.offset + this.start };
  }
  get bytesRead(): number {
    return this.parent.bytesRead;
  }
  read(offset: number, length: number, until?: number): Promise<Uint8Array> {
    checkRange(this, offset, length);
    return this.parent.read(this.start + offset, length, until === undefined ? undefined : this.start + Math.min(until, this.size));
  }
  async close(): Promise<void> {}
}

/** Streams [offset, offset+length) of a source in chunks of at most `chunkSize` bytes. */
export async function* readChunks(source: ByteSource, offset: number, length: number, chunkSize = DEFAULT_CHUNK): AsyncGenerator<Uint8Array> {
  checkRange(source, offset, length);
  const end = offset + length;
  for (let pos = offset; pos < end; pos += chunkSize) {
    yield await source.read(pos, Math.min(chunkSize, end - pos), end);
  }
}

/** 4 MiB: measured fastest here for file-to-file copies (8 MiB was up to 2× slower), and keeps memory flat. */
export const DEFAULT_CHUNK = 4 * 1024 * 1024;
