import { kMaxLength } from 'node:buffer';
import { constants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { TensorportError } from '../errors.ts';
import { checkRange, type ByteSource } from '../io/source.ts';

/**
 * A file read with positional reads (`pread`): no whole-file read, no stream state, so any number
 * of reads may be in flight and offsets far beyond 4 GiB work (numbers are exact to 2^53).
 * Every `read` returns a fresh buffer that the caller owns.
 */
export class FileSource implements ByteSource {
  bytesRead = 0;
  private closed = false;

  private constructor(
    private readonly fh: FileHandle,
    readonly name: string,
    readonly size: number,
  ) {}

  /** Opens a regular file (a FIFO or device could block forever or have no size: refused). */
  static async open(path: string): Promise<FileSource> {
    let fh: FileHandle;
    try {
      // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer (no effect on files).
      fh = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
    } catch (e) {
      throw ioError(`cannot open ${path}`, path, e);
    }
    try {
      const st = await fh.stat();
      if (!st.isFile()) throw new TensorportError('IoError', `${path} is not a regular file`, { path });
      return new FileSource(fh, path, st.size);
    } catch (e) {
      await fh.close().catch(() => {});
      throw e instanceof TensorportError ? e : ioError(`cannot stat ${path}`, path, e);
    }
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    checkRange(this, offset, length);
    if (this.closed) throw new TensorportError('IoError', `${this.name} is closed`, { path: this.name, offset });
    if (length > MAX_READ) {
      throw new TensorportError('IoError', `cannot read ${length} bytes of ${this.name} at once (at most ${MAX_READ}); stream them in chunks`, { path: this.name, offset });
    }
    // Own ArrayBuffer (not Node's shared pool), and a plain Uint8Array: Buffer#slice would alias.
    let buf: Uint8Array;
    try {
      buf = new Uint8Array(Buffer.allocUnsafeSlow(length).buffer, 0, length);
    } catch (e) {
      throw ioError(`cannot allocate ${length} bytes to read ${this.name}`, this.name, e, offset);
    }
    let filled = 0;
    while (filled < length) {
      let n: number;
      try {
        // One pread moves at most ~2 GiB on Linux: loop on short reads.
        ({ bytesRead: n } = await this.fh.read(buf, filled, length - filled, offset + filled));
      } catch (e) {
        throw ioError(`read of ${length} bytes at offset ${offset} in ${this.name} failed`, this.name, e, offset + filled);
      }
      if (n === 0) {
        throw new TensorportError('ShortRead', `${this.name}: expected ${length} bytes at offset ${offset}, the file ended after ${filled} (did it shrink?)`, { offset: offset + filled, path: this.name });
      }
      filled += n;
    }
    this.bytesRead += length;
    return buf;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.fh.close();
  }
}

/** The largest single Buffer (4 GiB on Node 20 x64). */
const MAX_READ = kMaxLength;

export function ioError(what: string, path: string, cause: unknown, offset?: number): TensorportError {
  const msg = cause instanceof Error ? cause.message : String(cause);
  return new TensorportError('IoError', `${what}: ${msg}`, offset === undefined ? { path, cause } : { path, cause, offset });
}

/** The errno code of a Node error (`ENOENT`, …), also when wrapped as a TensorportError cause. */
export function errnoCode(e: unknown): string | undefined {
  const err = e instanceof TensorportError ? (e as { cause?: unknown }).cause : e;
  const code = (err as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}
