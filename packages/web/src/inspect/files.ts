import { BlobSource, TensorportError, type ByteSource, type Folder } from '@tensorport/core';

/**
 * The files of one drop, sorted into roles, and every byte source opened over them. Sources are
 * `BlobSource`s (one `File.slice()` per read), so nothing is read until a reader asks, and the
 * sum of their `bytesRead` is what the page reports as "read 12 KB of 100 GB".
 */

export type Role = 'data' | 'index' | 'config' | 'ignored';

/** config.json holds MLX quantization settings: a few KiB; bigger ones are refused unread. */
export const MAX_CONFIG_BYTES = 16 * 1024 * 1024;

export function roleOf(name: string): Role {
  if (name.endsWith('.index.json')) return 'index';
  if (name === 'config.json') return 'config';
  // Other JSON (tokenizer.json, adapter_config.json...) and text files ride along in a model folder.
  if (/\.(json|txt|md|model|tiktoken|py)$/i.test(name)) return 'ignored';
  return 'data';
}

/**
 * The input of a drop: the index (its shards beside it), else the first checkpoint file by name;
 * `several` when there are more data files and no index (only the first is read).
 */
export function checkpointEntry(files: readonly File[]): { entry: string | undefined; several: number } {
  const roles = files.map((f) => roleOf(f.name));
  const index = files.find((_, i) => roles[i] === 'index');
  const data = files.filter((_, i) => roles[i] === 'data').map((f) => f.name).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return { entry: index?.name ?? data[0], several: index ? 0 : data.length };
}

/**
 * Which bytes of a file were read at least once, as merged [start, end) intervals. Readers look at
 * some bytes twice (detection, then the header; a scan, then the open), so the sum of read lengths
 * overstates what was touched; the union is what "read 12 KB of 100 GB" means.
 */
export class ReadRanges {
  private readonly starts: number[] = [];
  private readonly ends: number[] = [];

  add(start: number, end: number): void {
    if (end <= start) return;
    // First interval that ends at or after `start` (touching intervals merge).
    let lo = 0;
    let hi = this.ends.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.ends[mid]! < start) lo = mid + 1;
      else hi = mid;
    }
    let j = lo;
    let s = start;
    let e = end;
    while (j < this.starts.length && this.starts[j]! <= end) {
      s = Math.min(s, this.starts[j]!);
      e = Math.max(e, this.ends[j]!);
      j++;
    }
    this.starts.splice(lo, j - lo, s);
    this.ends.splice(lo, j - lo, e);
  }

  *intervals(): Generator<[number, number]> {
    for (let i = 0; i < this.starts.length; i++) yield [this.starts[i]!, this.ends[i]!];
  }

  get covered(): number {
    let n = 0;
    for (let i = 0; i < this.starts.length; i++) n += this.ends[i]! - this.starts[i]!;
    return n;
  }
}

/** A BlobSource that also records which ranges it served. */
class TrackedSource implements ByteSource {
  readonly ranges = new ReadRanges();
  constructor(private readonly inner: BlobSource) {}
  get size(): number {
    return this.inner.size;
  }
  get name(): string {
    return this.inner.name;
  }
  get bytesRead(): number {
    return this.inner.bytesRead;
  }
  async read(offset: number, length: number): Promise<Uint8Array> {
    const bytes = await this.inner.read(offset, length);
    this.ranges.add(offset, offset + length);
    return bytes;
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

export class SourcePool {
  private readonly opened: TrackedSource[] = [];
  private readonly byName = new Map<string, File>();

  constructor(readonly files: readonly File[]) {
    for (const f of files) if (!this.byName.has(f.name)) this.byName.set(f.name, f);
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  /** A fresh source over the file called `name`; ShardMissing when it was not dropped. */
  open(name: string): ByteSource {
    const file = this.byName.get(name);
    if (!file) throw new TensorportError('ShardMissing', `${name} is named by the index but was not among the files given; drop the index together with its shards`, { path: name });
    const source = new TrackedSource(new BlobSource(file, name));
    this.opened.push(source);
    return source;
  }

  /** A small file read whole (an index or config.json), counted like every other read. */
  async readSmall(name: string, limit: number): Promise<Uint8Array> {
    const source = this.open(name);
    if (source.size > limit) {
      throw new TensorportError(name === 'config.json' ? 'MlxInvalidConfig' : 'InvalidIndex', `${name} is ${source.size} bytes, more than the ${limit} allowed`, { path: name });
    }
    return source.read(0, source.size);
  }

  /** Names of the files some reader opened. */
  get openedNames(): Set<string> {
    return new Set(this.opened.map((s) => s.name));
  }

  /** Bytes requested from the files, repeats included (the sources' own `bytesRead`). */
  get bytesRequested(): number {
    return this.opened.reduce((n, s) => n + s.bytesRead, 0);
  }

  /** Distinct bytes read, per file (a file opened twice counts once). */
  get bytesRead(): number {
    const byName = new Map<string, ReadRanges>();
    for (const s of this.opened) {
      let r = byName.get(s.name);
      if (!r) byName.set(s.name, (r = new ReadRanges()));
      for (const [a, b] of s.ranges.intervals()) r.add(a, b);
    }
    let n = 0;
    for (const r of byName.values()) n += r.covered;
    return n;
  }
}

/** The drop as the library's Folder: every open goes through the pool, so its reads are counted. */
export function dropFolder(pool: SourcePool): Folder {
  const names = [...new Set(pool.files.map((f) => f.name))].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return {
    name: 'the files given',
    list: async () => names,
    size: async (name) => pool.files.find((f) => f.name === name)?.size ?? null,
    open: async (name) => pool.open(name),
    path: (name) => name,
  };
}
