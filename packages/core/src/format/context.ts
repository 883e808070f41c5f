import { DETECT_BYTES } from '../detect.ts';
import { TensorportError } from '../errors.ts';
import type { ByteSource } from '../io/source.ts';
import type { DeflateCodec } from '../zip/codec.ts';
import { readHeader, type SafetensorsHeader } from '../safetensors/header.ts';
import { openZip, type ZipArchive } from '../zip/reader.ts';
import type { Context, Folder } from './types.ts';

/**
 * Bytes every sniffer may look at without another read: magic numbers and a safetensors header
 * length (core's DETECT_BYTES). Small on purpose: the page reports every byte it reads, and what a
 * sniffer needs beyond this (a ZIP directory, an index) it asks the context for.
 */
export const HEAD_BYTES = DETECT_BYTES;

/** A shared source: readers may close it, the context closes the real one. */
class SharedSource implements ByteSource {
  constructor(readonly inner: ByteSource) {}
  get name(): string {
    return this.inner.name;
  }
  get size(): number {
    return this.inner.size;
  }
  get bytesRead(): number {
    return this.inner.bytesRead;
  }
  read(offset: number, length: number, until?: number): Promise<Uint8Array> {
    return this.inner.read(offset, length, until);
  }
  async close(): Promise<void> {}
  get copyWholeTo(): ((path: string) => Promise<boolean>) | undefined {
    return this.inner.copyWholeTo?.bind(this.inner);
  }
}

export interface ContextOptions {
  codec?: DeflateCodec;
  /** The input's name in messages (default: the entry's path, or the folder's name). */
  name?: string;
}

/** A Context over any Folder: caches opens, heads, ZIP directories and small files by name. */
export class FolderContext implements Context {
  readonly name: string;
  readonly codec: DeflateCodec | undefined;
  private readonly sources = new Map<string, Promise<ByteSource>>();
  private readonly heads = new Map<string, Promise<Uint8Array>>();
  private readonly zips = new Map<string, Promise<ZipArchive>>();
  private readonly headers = new Map<string, Promise<SafetensorsHeader>>();
  private readonly smalls = new Map<string, Promise<Uint8Array>>();

  constructor(
    readonly folder: Folder,
    readonly entry: string | null,
    options: ContextOptions = {},
  ) {
    this.codec = options.codec;
    this.name = options.name ?? (entry === null ? folder.name : folder.path(entry));
  }

  async has(name: string): Promise<boolean> {
    return (await this.folder.size(name)) !== null;
  }

  async size(name?: string): Promise<number> {
    return (await this.source(name)).size;
  }

  path(name?: string): string {
    const n = name ?? this.entry;
    if (n === null) return this.name;
    return n === this.entry ? this.name : this.folder.path(n);
  }

  private required(name: string | undefined): string {
    const n = name ?? this.entry;
    if (n === null) throw new TensorportError('IoError', `${this.name} is a folder, not a file`, { path: this.name });
    return n;
  }

  source(name?: string): Promise<ByteSource> {
    const n = this.required(name);
    let s = this.sources.get(n);
    if (!s) {
      s = this.folder.open(n).then((inner) => new SharedSource(inner));
      this.sources.set(n, s);
      // A failed open is not cached: the next caller gets its own error.
      s.catch(() => this.sources.delete(n));
    }
    return s;
  }

  head(name?: string): Promise<Uint8Array> {
    const n = this.required(name);
    let h = this.heads.get(n);
    if (!h) {
      h = this.source(n).then((s) => s.read(0, Math.min(HEAD_BYTES, s.size)));
      this.heads.set(n, h);
    }
    return h;
  }

  zip(name?: string): Promise<ZipArchive> {
    const n = this.required(name);
    let z = this.zips.get(n);
    if (!z) {
      z = this.source(n).then((s) => openZip(s, this.codec ? { codec: this.codec } : {}));
      this.zips.set(n, z);
      z.catch(() => undefined);
    }
    return z;
  }

  // A 100,000-tensor header is a 10 MB parse: a written file is validated and then opened, once.
  safetensorsHeader(name?: string): Promise<SafetensorsHeader> {
    const n = this.required(name);
    let h = this.headers.get(n);
    if (!h) {
      h = this.source(n).then((s) => readHeader(s));
      this.headers.set(n, h);
      h.catch(() => undefined);
    }
    return h;
  }

  bytes(name: string, maxBytes: number, code: 'InvalidIndex' | 'MlxInvalidConfig' = 'InvalidIndex'): Promise<Uint8Array> {
    let b = this.smalls.get(name);
    if (!b) {
      b = (async () => {
        // Size first: the file is untrusted and reading it would allocate all of it.
        const size = await this.folder.size(name);
        if (size !== null && size > maxBytes) {
          throw new TensorportError(code, `${this.path(name)} is ${size} bytes, more than the ${maxBytes} allowed`, { path: this.path(name) });
        }
        const s = await this.source(name);
        return s.read(0, s.size);
      })();
      this.smalls.set(name, b);
      b.catch(() => this.smalls.delete(name));
    }
    return b;
  }

  opened(): string[] {
    return [...this.sources.keys()].map((n) => this.path(n));
  }

  forget(): void {
    this.heads.clear();
    this.zips.clear();
    this.headers.clear();
    this.smalls.clear();
  }

  async close(): Promise<void> {
    const all = [...this.sources.values()];
    this.sources.clear();
    this.forget();
    await Promise.all(all.map((p) => p.then((s) => (s as SharedSource).inner.close(), () => undefined).catch(() => undefined)));
  }
}
