import { TensorportError } from '../errors.ts';
import { BlobSource, BytesSource, type ByteSource } from '../io/source.ts';
import { MemorySink, type ByteSink } from '../io/sink.ts';
import type { DeflateCodec } from '../zip/codec.ts';
import { FolderContext } from './context.ts';
import type { Context, Folder, OutputTarget } from './types.ts';

type Content = Blob | Uint8Array;

/** Files held in memory or as browser `File`s (a drop), keyed by name; the first of a name wins. */
export class MemoryFolder implements Folder {
  private readonly files = new Map<string, Content>();

  constructor(
    files: Iterable<readonly [string, Content]>,
    readonly name = '<dropped files>',
  ) {
    for (const [n, c] of files) if (!this.files.has(n)) this.files.set(n, c);
  }

  /** A folder from `File` objects, each under its own name. */
  static fromFiles(files: Iterable<File>, name?: string): MemoryFolder {
    return new MemoryFolder([...files].map((f) => [f.name, f] as const), name);
  }

  async list(): Promise<readonly string[]> {
    return [...this.files.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  async size(name: string): Promise<number | null> {
    const c = this.files.get(name);
    return c === undefined ? null : c instanceof Uint8Array ? c.byteLength : c.size;
  }

  async open(name: string): Promise<ByteSource> {
    const c = this.files.get(name);
    if (c === undefined) throw new TensorportError('IoError', `${name} is not among the files given`, { path: name });
    return c instanceof Uint8Array ? new BytesSource(c, name) : new BlobSource(c, name);
  }

  path(name: string): string {
    return name;
  }
}

/** A context over in-memory files: `entry` names the input file, or null for the whole set. */
export function memoryContext(folder: Folder, entry: string | null, codec?: DeflateCodec): Context {
  return new FolderContext(folder, entry, codec ? { codec } : {});
}

/**
 * An output kept in memory (a browser conversion, tests): each committed file's bytes by name.
 * Nothing is visible before the writer commits; a file target holds one file under `name`.
 */
export class MemoryTarget implements OutputTarget {
  readonly written = new Map<string, Uint8Array>();

  constructor(
    readonly name: string,
    readonly directory = false,
    readonly codec?: DeflateCodec,
  ) {}

  async prepare(): Promise<void> {}

  async create(file: string): Promise<ByteSink> {
    const key = this.directory ? file : this.name;
    const sink = new MemorySink(key);
    const written = this.written;
    return {
      name: key,
      get bytesWritten() {
        return sink.bytesWritten;
      },
      write: (c) => sink.write(c),
      abort: () => sink.abort(),
      async commit() {
        await sink.commit();
        written.set(key, sink.bytes());
      },
    };
  }

  async settle(): Promise<void> {}

  locate(file: string): string {
    return this.directory ? file : this.name;
  }

  async rollback(files: readonly string[]): Promise<void> {
    for (const f of files) this.written.delete(this.locate(f));
  }

  async reopen(): Promise<Context> {
    const folder = new MemoryFolder(this.written, this.name);
    return new FolderContext(folder, this.directory ? null : this.name, this.codec ? { codec: this.codec } : {});
  }

  protect(): void {}
}
