import { kMaxLength } from 'node:buffer';
import { constants } from 'node:fs';
import { copyFile, open, stat, type FileHandle } from 'node:fs/promises';
import { TensorportError } from '../errors.ts';
import { checkRange, type ByteSource } from '../io/source.ts';
import { PAGE, POOLED_MIN, giveBack, lend, misplaced } from './buffer-pool.ts';
import { SMALL_READ, SmallBlocks } from './small-blocks.ts';

/** A read started before it was asked for: the chunk after the last one read. */
interface Ahead {
  offset: number;
  length: number;
  data: Promise<Uint8Array>;
}

/** One sequential reader's chunks read ahead, oldest first. */
type Stream = Ahead[];

/**
 * A file read with positional reads (`pread`): no whole-file read, no stream state, so any number
 * of reads may be in flight and offsets far beyond 4 GiB work (numbers are exact to 2^53).
 * Every `read` returns a buffer that the caller owns (it may hand it to `FileSink.writeOwned`).
 *
 * Sequential chunk reads (≥ POOLED_MIN) are read ahead: the next `readAhead` chunks of the same size
 * are already being read while the caller works on this one, so the thread pool's reads overlap
 * the caller's writes instead of alternating with them, never past the `until` the caller gives (the
 * end of its stream). Up to MAX_STREAMS readers walking different ranges at once (two ZIP
 * members inflated side by side) each keep their own chunks ahead; a read that continues none of
 * them starts a new stream, and the least recently read one is dropped (at most `readAhead` chunks
 * read for nothing per dropped stream).
 */
export class FileSource implements ByteSource {
  bytesRead = 0;
  /** Bytes read ahead that no read asked for (dropped at a jump or at close). */
  bytesDropped = 0;
  /** preads made (a small read served from a block makes none): what a many-tensor file costs. */
  preads = 0;
  private closed = false;
  /** Least recently read first. */
  private streams: Stream[] = [];
  /** Chunks read ahead of a sequential reader; 0 turns read-ahead off (small-blocks.ts's blocks too). */
  readAhead = DEFAULT_READ_AHEAD;
  private readonly small: SmallBlocks;

  private constructor(
    private readonly fh: FileHandle,
    readonly name: string,
    readonly size: number,
  ) {
    this.small = new SmallBlocks(size, (offset, length) => this.readNow(offset, length));
  }

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

  async read(offset: number, length: number, until?: number): Promise<Uint8Array> {
    checkRange(this, offset, length);
    if (this.closed) throw new TensorportError('IoError', `${this.name} is closed`, { path: this.name, offset });
    if (length > MAX_READ) {
      throw new TensorportError('IoError', `cannot read ${length} bytes of ${this.name} at once (at most ${MAX_READ}); stream them in chunks`, { path: this.name, offset });
    }
    if (length < SMALL_READ && this.readAhead > 0) {
      const fromBlock = this.small.read(offset, length);
      if (fromBlock) {
        const buf = await fromBlock;
        this.bytesRead += length;
        return buf;
      }
    }
    let data: Promise<Uint8Array>;
    let stream = this.streams.find((a) => a[0]?.offset === offset && a[0].length === length);
    if (stream) {
      data = stream.shift()!.data;
      this.streams.splice(this.streams.indexOf(stream), 1);
    } else {
      data = this.readNow(offset, length);
      stream = [];
    }
    // Only a read that names its stream's end reads ahead: a one-off read (a 12 MB data.pkl, a
    // safetensors header) read up to twice its own size after itself, held until the file closed.
    if (until !== undefined && length >= POOLED_MIN && this.readAhead > 0) {
      const stop = Math.min(until, this.size);
      let next = stream.length ? stream[stream.length - 1]!.offset + length : offset + length;
      while (stream.length < this.readAhead && next < stop) {
        const n = Math.min(length, stop - next);
        const p = this.readNow(next, n);
        // Not unhandled while nobody awaits it yet: a failed read-ahead fails the read that asks for it.
        p.catch(() => {});
        stream.push({ offset: next, length: n, data: p });
        next += n;
      }
    }
    if (stream.length) {
      this.streams.push(stream);
      if (this.streams.length > MAX_STREAMS) this.drop(this.streams.shift()!);
    }
    const buf = await data;
    this.bytesRead += length;
    return buf;
  }

  /** Read-ahead chunks nobody will ask for: their buffers go back once their reads end. */
  private drop(stream: Stream): void {
    for (const a of stream) {
      this.bytesDropped += a.length;
      a.data.then(giveBack, () => {});
    }
  }

  private async readNow(offset: number, length: number): Promise<Uint8Array> {
    if (length >= POOLED_MIN && misplaced(-offset)) return this.readPlaced(offset, length);
    let buf: Uint8Array;
    try {
      buf = lend(length);
    } catch (e) {
      throw ioError(`cannot allocate ${length} bytes to read ${this.name}`, this.name, e, offset);
    }
    return this.readInto(buf, offset, length);
  }

  /**
   * A chunk starting 1-31 bytes before a page boundary (`misplaced`): read into a buffer at the
   * same place in its page as the file offset, then copied into a read buffer of its own (which
   * starts a page).
   */
  private async readPlaced(offset: number, length: number): Promise<Uint8Array> {
    const place = offset % PAGE;
    let scratch: Uint8Array;
    let buf: Uint8Array;
    try {
      scratch = lend(length + PAGE);
      buf = lend(length);
    } catch (e) {
      throw ioError(`cannot allocate ${length} bytes to read ${this.name}`, this.name, e, offset);
    }
    try {
      buf.set(await this.readInto(scratch.subarray(place, place + length), offset, length));
      return buf;
    } finally {
      giveBack(scratch);
    }
  }

  private async readInto(buf: Uint8Array, offset: number, length: number): Promise<Uint8Array> {
    let filled = 0;
    while (filled < length) {
      let n: number;
      try {
        // One pread moves at most ~2 GiB on Linux: loop on short reads.
        this.preads++;
        ({ bytesRead: n } = await this.fh.read(buf, filled, length - filled, offset + filled));
      } catch (e) {
        throw ioError(`read of ${length} bytes at offset ${offset} in ${this.name} failed`, this.name, e, offset + filled);
      }
      if (n === 0) {
        throw new TensorportError('ShortRead', `${this.name}: expected ${length} bytes at offset ${offset}, the file ended after ${filled} (did it shrink?)`, { offset: offset + filled, path: this.name });
      }
      filled += n;
    }
    return buf;
  }

  /**
   * `fs.copyFile` of this file's path into a new file `path`: libuv copies with copy_file_range (a
   * reflink where the file system makes one), the in-kernel copy `cp` makes. It copies by path, so
   * the path must still name the file this source opened, unchanged in size and mtime, before and
   * after the copy. COPYFILE_EXCL is what keeps it fast on ext4: without it libuv truncates the
   * destination to 0 first, which arms ext4's auto_da_alloc and makes the close() write all the
   * data out (0.8 s of a 2 GiB copy, measured); a new file is not truncated.
   */
  async copyWholeTo(path: string): Promise<boolean> {
    if (this.closed) return false;
    const opened = await this.fh.stat({ bigint: true });
    if (!(await this.namesSame(opened))) return false;
    try {
      await copyFile(this.name, path, constants.COPYFILE_EXCL);
    } catch {
      return false;
    }
    return this.namesSame(opened);
  }

  private async namesSame(opened: { dev: bigint; ino: bigint; size: bigint; mtimeNs: bigint }): Promise<boolean> {
    const [now, named] = await Promise.all([this.fh.stat({ bigint: true }), stat(this.name, { bigint: true }).catch(() => null)]);
    return named !== null && now.size === BigInt(this.size) && now.mtimeNs === opened.mtimeNs
      && named.dev === opened.dev && named.ino === opened.ino;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const pending = this.streams.flat().map((a) => a.data.catch(() => {}));
    for (const stream of this.streams) this.drop(stream);
    this.streams = [];
    // A read still in flight on a closed descriptor could read another file opened under its number.
    await Promise.all([...pending, this.small.clear()]);
    await this.fh.close();
  }
}

/**
 * Two chunks ahead: measured in bench/io-levers.mjs (one read in flight and one write in flight
 * already overlap; more adds memory, not speed, on 2 cores).
 */
const DEFAULT_READ_AHEAD = 2;

/**
 * Sequential readers followed at once: writers stream at most two tensors concurrently
 * (tensor-chunks.ts), each may read through a wrapper (a ZIP member's compressed bytes, its
 * header apart); four leaves room without letting a random reader pin many chunks.
 */
const MAX_STREAMS = 4;

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
