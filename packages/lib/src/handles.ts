/**
 * An OutputTarget over the File System Access API (a handle from showSaveFilePicker or
 * showDirectoryPicker, or one of the origin-private file system): the output policy of the CLI's
 * FileTarget, as far as handles allow it. Browser-safe; the handle types are structural so the
 * library builds without the DOM typings.
 *
 * All or nothing: a writable stream of Chromium writes to a swap file that replaces the file only
 * on `close()`, and `abort()` discards it, so a file's old content survives a failed write. What
 * the API adds on its own is the entry itself (the save picker creates an empty file, a directory
 * target needs `getFileHandle({ create })`): an entry this target made is removed on abort. In a
 * directory, files are written under a temporary name and moved onto their own on commit when the
 * handle can `move` (Chromium), so no entry of the output's names exists before its bytes do.
 * Old weight files in a directory (model.safetensors, shards, an index) that this write would not
 * replace are refused without force and removed with it once the files are committed, as on disk.
 */
import { FolderContext, MemoryFolder, TensorportError, type ByteSink, type Context, type DeflateCodec, type OutputTarget } from '@tensorport/core';
import { leftoversExist, leftoverWeightFiles } from './model-files.ts';

export interface WritableLike {
  write(data: Uint8Array | { type: 'write'; position: number; data: Uint8Array }): Promise<void>;
  seek(position: number): Promise<void>;
  close(): Promise<void>;
  abort(reason?: unknown): Promise<void>;
}

export interface FileHandleLike {
  readonly kind: 'file';
  readonly name: string;
  getFile(): Promise<Blob>;
  createWritable(options?: { keepExistingData?: boolean }): Promise<WritableLike>;
  /** Chromium: rename within its directory. */
  move?(name: string): Promise<void>;
  /** Chromium: delete this entry. */
  remove?(): Promise<void>;
}

export interface DirectoryHandleLike {
  readonly kind: 'directory';
  readonly name: string;
  getFileHandle(name: string, options?: { create?: boolean }): Promise<FileHandleLike>;
  removeEntry(name: string): Promise<void>;
  /** The names of its entries (old shards and indexes are found among them). */
  keys(): AsyncIterable<string>;
}

export interface HandleTargetOptions {
  /** Replace existing files in a directory target (a file handle was chosen for replacing). */
  force?: boolean;
  /** CRCs and DEFLATE for ZIP writers, and for reading the output back. */
  codec?: DeflateCodec;
  /** Aborting it makes the next write fail with an AbortError; the write is then rolled back. */
  signal?: { readonly aborted: boolean; readonly reason?: unknown };
}

/** Suffix of a file being written into a directory target. */
export const PARTIAL_SUFFIX = '.tensorport-partial';

export class HandleTarget implements OutputTarget {
  readonly directory: boolean;
  readonly name: string;
  readonly codec: DeflateCodec | undefined;
  private shadows: readonly string[] = [];

  private constructor(
    private readonly handle: FileHandleLike | DirectoryHandleLike,
    private readonly options: HandleTargetOptions,
  ) {
    this.directory = handle.kind === 'directory';
    this.name = handle.name;
    this.codec = options.codec;
  }

  /** One output file: what showSaveFilePicker returned. */
  static file(handle: FileHandleLike, options: HandleTargetOptions = {}): HandleTarget {
    return new HandleTarget(handle, options);
  }

  /** A directory receiving the format's own file names: what showDirectoryPicker returned. */
  static directory(handle: DirectoryHandleLike, options: HandleTargetOptions = {}): HandleTarget {
    return new HandleTarget(handle, options);
  }

  // Handles cannot name the dropped files: a page cannot learn where a dropped File lives.
  protect(): void {}

  locate(file: string): string {
    return this.directory ? `${this.name}/${file}` : this.name;
  }

  async prepare(files: readonly string[], shadows: readonly string[] = []): Promise<void> {
    if (!this.directory) return;
    const present: string[] = [];
    for await (const name of (this.handle as DirectoryHandleLike).keys()) present.push(name);
    // The FileTarget's rule: old weight files a loader would read with the new ones go with force, else refuse.
    const leftovers = leftoverWeightFiles(present, files, shadows);
    if (this.options.force !== true) {
      for (const f of files) {
        if (present.includes(f)) throw new TensorportError('OutputExists', `${this.locate(f)} already exists`, { path: this.locate(f) });
      }
      if (leftovers.length > 0) throw leftoversExist(this.locate(leftovers[0]!), leftovers);
    }
    this.shadows = leftovers;
  }

  async create(file: string): Promise<ByteSink> {
    this.checkSignal();
    if (!this.directory) return this.sinkOver(this.handle as FileHandleLike, this.name, null);
    const dir = this.handle as DirectoryHandleLike;
    const temp = await this.io(file, () => dir.getFileHandle(file + PARTIAL_SUFFIX, { create: true }));
    if (temp.move) return this.sinkOver(temp, file, temp.move.bind(temp));
    // No move: write under the final name; abort removes it.
    await dir.removeEntry(file + PARTIAL_SUFFIX).catch(() => undefined);
    return this.sinkOver(await this.io(file, () => dir.getFileHandle(file, { create: true })), file, null);
  }

  async settle(): Promise<void> {
    if (!this.directory) return;
    for (const s of this.shadows) await (this.handle as DirectoryHandleLike).removeEntry(s).catch(() => undefined);
  }

  async rollback(files: readonly string[]): Promise<void> {
    if (this.directory) {
      for (const f of files) await (this.handle as DirectoryHandleLike).removeEntry(f).catch(() => undefined);
      return;
    }
    if (files.length > 0) await removeFile(this.handle as FileHandleLike);
  }

  async reopen(files: readonly string[]): Promise<Context> {
    const entries: Array<[string, Blob]> = [];
    if (this.directory) {
      for (const f of files) entries.push([f, await (await (this.handle as DirectoryHandleLike).getFileHandle(f)).getFile()]);
    } else {
      entries.push([this.name, await (this.handle as FileHandleLike).getFile()]);
    }
    return new FolderContext(new MemoryFolder(entries, this.name), this.directory ? null : this.name, this.codec ? { codec: this.codec } : {});
  }

  private checkSignal(): void {
    const s = this.options.signal;
    if (s?.aborted) throw s.reason instanceof Error ? s.reason : new AbortError();
  }

  private async io<T>(file: string, op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (e) {
      if (e instanceof TensorportError || isAbort(e)) throw e;
      throw new TensorportError('IoError', `cannot write ${this.locate(file)}: ${(e as Error).message}`, { path: this.locate(file), cause: e });
    }
  }

  /** A sink over `handle`; `move` (directory targets) puts the finished file under `file`. */
  private async sinkOver(handle: FileHandleLike, file: string, move: ((name: string) => Promise<void>) | null): Promise<ByteSink & { writeAt(offset: number, bytes: Uint8Array): Promise<void> }> {
    // A file that was empty before (the save picker's new entry, or one this target created) is removed on abort.
    const createdHere = move !== null || this.directory || (await handle.getFile()).size === 0;
    const writable = await this.io(file, () => handle.createWritable({ keepExistingData: false }));
    const dir = this.directory ? (this.handle as DirectoryHandleLike) : null;
    const located = this.locate(file);
    let written = 0;
    let open = true;
    const discard = async (): Promise<void> => {
      if (open) {
        open = false;
        await writable.abort().catch(() => undefined);
      }
      if (!createdHere) return;
      if (dir) await dir.removeEntry(move ? file + PARTIAL_SUFFIX : file).catch(() => undefined);
      else await removeFile(handle);
    };
    return {
      name: located,
      get bytesWritten() {
        return written;
      },
      write: async (chunk) => {
        this.checkSignal();
        // Awaiting each write is the back-pressure: no more than one chunk is in flight.
        await this.io(file, () => writable.write(chunk));
        written += chunk.byteLength;
      },
      // ZIP writers patch each local header once its CRC and sizes are known (no data descriptors:
      // the CLI's layout, byte for byte); the stream then goes back to the end.
      writeAt: async (offset: number, bytes: Uint8Array) => {
        this.checkSignal();
        await this.io(file, async () => {
          await writable.write({ type: 'write', position: offset, data: bytes });
          await writable.seek(written);
        });
      },
      commit: async () => {
        this.checkSignal();
        open = false;
        await this.io(file, () => writable.close());
        if (move) {
          if (this.options.force === true) await dir!.removeEntry(file).catch(() => undefined);
          await this.io(file, () => move(file));
        }
      },
      abort: discard,
      // After commit, a later shard failed: the committed file goes too.
      revert: async () => {
        if (dir) await dir.removeEntry(file).catch(() => undefined);
        else await removeFile(handle);
      },
    };
  }
}

/** What a cancelled conversion throws (the DOM's AbortError, also where DOMException is missing). */
export class AbortError extends Error {
  override readonly name = 'AbortError';
  constructor(message = 'the conversion was cancelled') {
    super(message);
  }
}

export function isAbort(e: unknown): boolean {
  return e instanceof Error && e.name === 'AbortError';
}

/** Deletes a file entry; where `remove` is missing, empties it (the best a handle allows). */
async function removeFile(handle: FileHandleLike): Promise<void> {
  if (handle.remove) {
    await handle.remove().catch(() => undefined);
    return;
  }
  const w = await handle.createWritable({ keepExistingData: false }).catch(() => null);
  await w?.close().catch(() => undefined);
}
