import { constants } from 'node:fs';
import { link, lstat, open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { TensorportError } from '../errors.ts';
import type { ByteSink } from '../io/sink.ts';
import type { ByteSource } from '../io/source.ts';
import { registerTempFile, unregisterTempFile } from './cleanup.ts';
import { PAGE, giveBack, isLent, misplaced, pageAligned } from './buffer-pool.ts';
import { CommitGroup, type GroupMember } from './commit-group.ts';
import { errnoCode, ioError } from './file-source.ts';
import { ownedName } from './owner.ts';
import { sweepOnce } from './stale.ts';

export interface FileSinkOptions {
  /** Replace an existing target (on commit). Without it an existing target is OutputExists. */
  force?: boolean;
  /**
   * fsync the file before the rename (and the directory after), so a crash cannot leave an empty
   * or partial file under the target's name. Default true; see docs/architecture.md for the cost.
   * The file gets fdatasync (its data and size, what reading it back needs; timestamps may lag),
   * 0.22 s against 0.31 s for fsync on 256 MiB here; the directory gets a full fsync after the rename.
   */
  fsync?: boolean;
  /** Write-behind buffer size; two are used (one filling, one being written). Default 4 MiB, like DEFAULT_CHUNK. */
  bufferSize?: number;
  /**
   * With `fsync`, a datasync is started in the background every this many bytes written, so the
   * disk writes while the copy goes on and the final one waits only for the tail. Default 64 MiB;
   * Infinity turns it off.
   */
  writebackBytes?: number;
  /** Writes queued on the thread pool at once (default 2; 1 = strictly one after the other). */
  writesInFlight?: number;
  /**
   * The multi-file commit this file belongs to (all in one directory): its journal lets a crash in
   * the middle of the renames be rolled back by the next run. See commit-group.ts.
   */
  group?: CommitGroup;
}

const DEFAULT_BUFFER = 4 * 1024 * 1024;
const NO_BUFFER = new Uint8Array(0);
/** Writes queued at once (see issue): measured in bench/io-levers.mjs. */
const DEFAULT_WRITES_IN_FLIGHT = 2;
/** Bytes written between background datasyncs (startWriteback): measured in docs/benchmarks.md. */
const DEFAULT_WRITEBACK = 64 * 1024 * 1024;

/**
 * A file written all-or-nothing: bytes go to a temp file beside the target (same directory, so the
 * final rename is atomic and never crosses file systems); `commit` renames it onto the target,
 * `abort` deletes it. Until commit the target is untouched, also when the process is interrupted
 * (see cleanup.ts).
 *
 * Writes are copied into a buffer and written in big positional writes while the caller produces
 * the next chunk: two buffers, one filling and one being written. A chunk handed over with
 * `writeOwned` is written as it is, without that copy. At most `writesInFlight` writes are queued,
 * so memory is bounded by those buffers and chunks.
 */
export class FileSink implements ByteSink {
  bytesWritten = 0;
  /** Background datasyncs started so far (see `writebackBytes`). */
  writebacks = 0;
  private state: 'open' | 'committing' | 'prepared' | 'committed' | 'aborted' = 'open';
  private member: GroupMember | null = null;
  private buf: Uint8Array;
  private spare: Uint8Array;
  private fill = 0;
  private filePos = 0;
  /** Writes not finished yet (at most `writesInFlight`), and the one among them writing `spare`. */
  private readonly inflight = new Set<Promise<void>>();
  private bufWrite: Promise<void> | null = null;
  /** A datasync started while writing (see startWriteback), and the file position it covers from. */
  private writeback: Promise<void> | null = null;
  private syncedTo = 0;
  private failure: TensorportError | null = null;

  private constructor(
    private fh: FileHandle,
    /** The final path. */
    readonly name: string,
    readonly tempPath: string,
    private readonly opts: Required<Omit<FileSinkOptions, 'group'>> & { group?: CommitGroup },
  ) {
    this.buf = pageAligned(opts.bufferSize + PAGE);
    this.spare = pageAligned(opts.bufferSize + PAGE);
  }

  static async create(target: string, options: FileSinkOptions = {}): Promise<FileSink> {
    const opts: Required<Omit<FileSinkOptions, 'group'>> & { group?: CommitGroup } = { force: false, fsync: true, bufferSize: DEFAULT_BUFFER, writebackBytes: DEFAULT_WRITEBACK, writesInFlight: DEFAULT_WRITES_IN_FLIGHT, ...options };
    const path = resolve(target);
    await checkTarget(path, opts.force);
    // Leftovers of killed runs in this directory go first (reported as warnings; see stale.ts).
    sweepOnce(dirname(path));
    const temp = join(dirname(path), ownedName(basename(path), 'tmp'));
    // Registered before it exists: a signal between open and registration must not leak it.
    registerTempFile(temp);
    let fh: FileHandle;
    try {
      fh = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o666);
    } catch (e) {
      unregisterTempFile(temp);
      throw ioError(`cannot create a temporary file beside ${path}`, path, e);
    }
    return new FileSink(fh, path, temp, opts);
  }

  async write(chunk: Uint8Array): Promise<void> {
    this.checkOpen();
    let pos = 0;
    while (pos < chunk.byteLength) {
      const n = Math.min(this.opts.bufferSize - this.fill, chunk.byteLength - pos);
      this.buf.set(chunk.subarray(pos, pos + n), this.start + this.fill);
      this.fill += n;
      pos += n;
      if (this.fill === this.opts.bufferSize) await this.flush();
    }
    this.bytesWritten += chunk.byteLength;
  }

  /**
   * Like `write`, but the caller gives the chunk up: neither it nor whoever produced the chunk reads
   * or changes it again. A whole FileSource read buffer is then written from where it is (no copy
   * into the write-behind buffer) and goes back to the read buffer pool once written; anything else
   * (views, buffers a producer may reuse) is copied as `write` does.
   */
  async writeOwned(chunk: Uint8Array): Promise<void> {
    if (!isLent(chunk)) return this.write(chunk);
    if (misplaced(this.filePos + this.fill)) {
      // A read buffer starts a page: written a few bytes into one, it is copied into the
      // write-behind buffer, which is placed right (see `start`).
      await this.write(chunk);
      giveBack(chunk);
      return;
    }
    this.checkOpen();
    // Bytes already buffered go first, in their own write; then the chunk.
    await this.flush();
    await this.room();
    const at = this.filePos;
    this.filePos += chunk.byteLength;
    this.bytesWritten += chunk.byteLength;
    this.issue(chunk, at, () => giveBack(chunk));
  }

  /**
   * The whole of `source` by an in-kernel copy into the temp file (FileSource.copyWholeTo), only
   * while nothing is written. The copy must make a new file (see copyWholeTo), so the empty temp
   * file is closed and removed first and the copy reopened under its name; it takes the source's
   * permissions, and the temp file's own are put back, so the output's mode does not depend on the
   * route its bytes took. On false the temp file is there again, empty.
   */
  async copyWhole(source: ByteSource): Promise<boolean> {
    this.checkOpen();
    if (!source.copyWholeTo || this.bytesWritten !== 0) return false;
    await this.settle();
    let copied = false;
    try {
      const { mode } = await this.fh.stat();
      await this.fh.close();
      await unlink(this.tempPath);
      copied = await source.copyWholeTo(this.tempPath);
      if (copied) {
        this.fh = await open(this.tempPath, constants.O_WRONLY);
        await this.fh.chmod(mode & 0o7777);
      } else {
        // Whatever a failed copy left goes; a new empty file (not a truncated one: see copyWholeTo).
        await unlink(this.tempPath).catch((e: unknown) => {
          if (errnoCode(e) !== 'ENOENT') throw e;
        });
        this.fh = await open(this.tempPath, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o666);
      }
    } catch (e) {
      this.failure = ioError(`copy of ${source.name} into ${this.tempPath} failed`, this.name, e);
      throw this.failure;
    }
    if (!copied) return false;
    this.filePos = source.size;
    this.bytesWritten = source.size;
    return true;
  }

  /**
   * Overwrites bytes already written (a ZIP local header patched once its sizes and CRC are known).
   * The part still in the write-behind buffer is patched there; the rest is written in place after
   * the pending write settles, so the two never race.
   */
  async writeAt(offset: number, bytes: Uint8Array): Promise<void> {
    this.checkOpen();
    const end = offset + bytes.byteLength;
    if (!Number.isSafeInteger(offset) || offset < 0 || end > this.bytesWritten) {
      throw new TensorportError('IoError', `${this.name}: patch of ${bytes.byteLength} bytes at ${offset} is outside the ${this.bytesWritten} bytes written`, { path: this.name, offset });
    }
    const flushedEnd = this.filePos;
    if (end > flushedEnd) {
      const from = Math.max(offset, flushedEnd);
      this.buf.set(bytes.subarray(from - offset), this.start + from - flushedEnd);
    }
    if (offset < flushedEnd) {
      await this.settle();
      const part = bytes.subarray(0, Math.min(end, flushedEnd) - offset);
      try {
        await writeAll(this.fh, part, offset);
      } catch (e) {
        this.failure = ioError(`patch of ${part.byteLength} bytes at offset ${offset} to ${this.tempPath} failed`, this.name, e, offset);
        throw this.failure;
      }
    }
  }

  /**
   * First phase of a multi-file commit: every byte written and fsynced, the file closed, nothing
   * visible yet. `commit` then only publishes it, `revert` undoes that, `finish` ends the group.
   */
  async prepare(): Promise<void> {
    this.checkOpen();
    this.state = 'committing';
    try {
      await this.drain();
      const st = await this.fh.stat({ bigint: true });
      await this.fh.close();
      this.member = { target: this.name, temp: this.tempPath, backup: join(dirname(this.name), ownedName(basename(this.name), 'bak')), dev: String(st.dev), ino: String(st.ino), committed: false };
      this.opts.group ??= new CommitGroup(false);
      this.opts.group.add(this.member);
    } catch (e) {
      this.state = 'open';
      await this.abort();
      throw e instanceof TensorportError ? e : ioError(`cannot finish ${this.name}`, this.name, e);
    }
    this.state = 'prepared';
  }

  /** Undoes a commit made after `prepare` (removes the file, or puts back the one it replaced). */
  async revert(): Promise<void> {
    if (!this.member || !this.opts.group) return;
    this.opts.group.revert(this.member);
    this.state = 'aborted';
  }

  /** The group this sink was committed (or reverted) with is settled: drop its journal and backups. */
  async finish(): Promise<void> {
    this.opts.group?.finish();
  }

  async commit(): Promise<void> {
    if (this.state === 'prepared') return this.commitPrepared();
    this.checkOpen();
    this.state = 'committing';
    try {
      await this.drain();
      await this.fh.close();
      await this.publish();
    } catch (e) {
      this.state = 'open';
      await this.abort();
      throw e instanceof TensorportError ? e : ioError(`cannot finish ${this.name}`, this.name, e);
    }
    this.state = 'committed';
    unregisterTempFile(this.tempPath);
    if (this.opts.fsync) await syncDirectory(dirname(this.name));
  }

  private async commitPrepared(): Promise<void> {
    const member = this.member!;
    try {
      this.opts.group!.publish(member, this.opts.force);
    } catch (e) {
      // A half-done publish (backup made, rename refused) is undone here; the caller reverts the others.
      try {
        this.opts.group!.revert(member);
      } catch {
        // The group's rollback on exit, or the next run's sweep, retries.
      }
      this.state = 'aborted';
      unregisterTempFile(this.tempPath);
      if (errnoCode(e) === 'EEXIST') throw outputExists(this.name);
      throw ioError(`cannot publish ${this.name}`, this.name, e);
    }
    this.state = 'committed';
    unregisterTempFile(this.tempPath);
    if (this.opts.fsync) await syncDirectory(dirname(this.name));
  }

  /** Deletes the temp file; the target is untouched. Safe to call twice; a no-op after commit. */
  async abort(): Promise<void> {
    if (this.state === 'committed' || this.state === 'aborted') return;
    if (this.state === 'prepared') {
      this.state = 'aborted';
      await unlink(this.tempPath).catch(() => {});
      unregisterTempFile(this.tempPath);
      return;
    }
    this.state = 'aborted';
    await Promise.all(this.inflight);
    await this.writeback?.catch(() => {});
    await this.fh.close().catch(() => {});
    this.release();
    await unlink(this.tempPath).catch(() => {});
    unregisterTempFile(this.tempPath);
  }

  private checkOpen(): void {
    if (this.failure) throw this.failure;
    if (this.state !== 'open') throw new TensorportError('IoError', `${this.name}: write after ${this.state === 'committing' || this.state === 'prepared' ? 'commit started' : this.state}`, { path: this.name });
  }

  /** Hands the filled buffer to the writer (once the write of the other one finished) and swaps buffers. */
  private async flush(): Promise<void> {
    await this.bufWrite;
    this.bufWrite = null;
    if (this.failure) throw this.failure;
    if (this.fill === 0) return;
    await this.room();
    const data = this.buf.subarray(this.start, this.start + this.fill);
    const at = this.filePos;
    this.filePos += this.fill;
    this.bufWrite = this.issue(data, at);
    [this.buf, this.spare] = [this.spare, this.buf];
    this.fill = 0;
  }

  /**
   * Starts a positional write. Writes may overlap (their ranges never do): the next one is already
   * queued on the thread pool when the current one ends, so the writer thread does not wait for
   * this thread to hand it the next chunk (measured in docs/benchmarks.md). A failed write fails
   * every later call.
   */
  private issue(data: Uint8Array, at: number, written?: () => void): Promise<void> {
    const p: Promise<void> = writeAll(this.fh, data, at)
      .then(
        () => {
          written?.();
          this.startWriteback();
        },
        (e: unknown) => {
          this.failure ??= ioError(`write of ${data.byteLength} bytes at offset ${at} to ${this.tempPath} failed`, this.name, e, at);
        },
      )
      .finally(() => this.inflight.delete(p));
    this.inflight.add(p);
    return p;
  }

  /** Waits until another write may start. */
  private async room(): Promise<void> {
    while (this.inflight.size >= Math.max(1, this.opts.writesInFlight)) await Promise.race(this.inflight);
    if (this.failure) throw this.failure;
  }

  /**
   * With fsync on, the data is sent to the disk while the rest is still being written: every
   * `writebackBytes` a datasync starts in the background (one at a time), so the disk works
   * during the copy and the final datasync waits only for the tail. A sync that fails fails the
   * commit. (Node has no sync_file_range, the call made for exactly this.)
   */
  private startWriteback(): void {
    if (!this.opts.fsync || this.writeback || this.filePos - this.syncedTo < this.opts.writebackBytes) return;
    const upTo = this.filePos;
    this.writebacks++;
    this.writeback = this.fh.datasync().then(
      () => {
        this.syncedTo = upTo;
        this.writeback = null;
      },
      (e: unknown) => {
        this.failure ??= ioError(`datasync of ${this.tempPath} failed`, this.name, e);
        this.writeback = null;
      },
    );
  }

  /** Every byte written and, with fsync, on the disk: what both commits start with. */
  private async drain(): Promise<void> {
    await this.flush();
    await this.settle();
    await this.writeback;
    if (this.failure) throw this.failure;
    if (this.opts.fsync) await this.fh.datasync();
    this.release();
  }

  /**
   * Where the buffered bytes begin in `buf`: at the file position's offset in its page, so that the
   * buffer and the file are at the same place in their pages when the buffer is written. The kernel
   * copies a write up to 4× slower when they are not (bench/io-levers.mjs: 2 GiB of pwrite 0.18 s
   * at the same page offset, 0.27 s 8 bytes off a 32-byte boundary, 0.72 s 8 bytes after it).
   * `filePos` moves only when the buffer is handed over, so this holds while it fills.
   */
  private get start(): number {
    return this.filePos % PAGE;
  }

  /** Nothing is written any more: the two write-behind buffers (8 MiB) need not outlive that. */
  private release(): void {
    this.buf = NO_BUFFER;
    this.spare = NO_BUFFER;
  }

  private async settle(): Promise<void> {
    await Promise.all(this.inflight);
    this.bufWrite = null;
    if (this.failure) throw this.failure;
  }

  /**
   * With `force`, a rename replaces whatever is at the target. Without it, `link` publishes the
   * file only if the target still does not exist (atomic no-clobber); file systems without hard
   * links fall back to check-then-rename.
   */
  private async publish(): Promise<void> {
    if (this.opts.force) {
      await rename(this.tempPath, this.name);
      return;
    }
    try {
      await link(this.tempPath, this.name);
    } catch (e) {
      const code = errnoCode(e);
      if (code === 'EEXIST') throw outputExists(this.name);
      if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EMLINK', 'EXDEV'].includes(code ?? '')) throw e;
      await checkTarget(this.name, false);
      await rename(this.tempPath, this.name);
      return;
    }
    await unlink(this.tempPath);
  }
}

async function writeAll(fh: FileHandle, data: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < data.byteLength) {
    const { bytesWritten } = await fh.write(data, done, data.byteLength - done, position + done);
    if (bytesWritten === 0) throw new Error('the file system accepted no bytes');
    done += bytesWritten;
  }
}

async function checkTarget(path: string, force: boolean): Promise<void> {
  let st;
  try {
    st = await lstat(path);
  } catch (e) {
    if (errnoCode(e) === 'ENOENT') return;
    throw ioError(`cannot check ${path}`, path, e);
  }
  if (st.isDirectory()) throw new TensorportError('OutputExists', `${path} is a directory`, { path });
  if (!force) throw outputExists(path);
}

function outputExists(path: string): TensorportError {
  return new TensorportError('OutputExists', `${path} already exists (use --force to replace it)`, { path });
}

/** Makes the rename itself durable. Best effort: some file systems refuse fsync on directories. */
async function syncDirectory(dir: string): Promise<void> {
  try {
    const fh = await open(dir, 'r');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  } catch {
    // Not fatal: the file's data is already synced; only the name might be lost in a crash.
  }
}
