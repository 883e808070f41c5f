import { TensorportError } from '../errors.ts';
import { recycleChunk } from '../io/recycle.ts';
import { checkRange, type ByteSource } from '../io/source.ts';
import { getRange, type Counters, type HttpOptions, type Pin } from './http.ts';

export interface HttpSourceOptions extends HttpOptions {
  /** Bytes of the first request (the probe): enough for a safetensors header length, a ZIP's first record, an npy header. */
  probeBytes?: number;
  /** Cache granule for small reads (headers, directories, pickles): 64 KiB. */
  pageSize?: number;
  /** Pages kept (LRU): 64 × 64 KiB = 4 MiB. */
  cachePages?: number;
  /** Largest single request; bigger reads are split (16 MiB, as zip.js, inside AWS's 8–16 MB advice). */
  window?: number;
  /** Requests in flight per file (4: the Hub's CDN throttles more per source; remote.md §3.2). */
  concurrency?: number;
  /** A server that ignores Range is accepted only for files up to this size, read whole (default 16 MiB). */
  wholeFileMax?: number;
}

export interface TransferStats {
  /** The file's size, or all files' sizes together. */
  size: number;
  requests: number;
  /** Body bytes received (including read-ahead), against `size`. */
  bytesTransferred: number;
}

const KIB = 1024;
const MIB = 1024 * KIB;
/** Reads at least this long are tensor data: fetched directly (not cached), read ahead when sequential. */
const LARGE_READ = 256 * KIB;
/** Two missing page runs this close are fetched as one request: a gap costs less than a round trip. */
const GAP_PAGES = 2;
/** Small reads that walk forward page after page (a big pickle, npz member headers) fetch runs doubling up to this many pages. */
const MAX_STREAK = 32;

interface Segment {
  start: number;
  end: number;
  data: Promise<Uint8Array>;
}

/**
 * A remote file over HTTP Range. The probe pins size, ETag and the final URL (after redirects:
 * later reads skip the resolver); every later answer is checked against the pin, so a file that
 * changes is RemoteFileChanged, never mixed bytes. Small reads go through a bounded page cache
 * (a header, a ZIP directory or a pickle parsed through many small reads costs few requests);
 * large sequential reads are read ahead `concurrency` windows deep, which bounds memory too.
 */
export class HttpSource implements ByteSource {
  bytesRead = 0;
  private readonly counters: Counters = { requests: 0, bytesTransferred: 0 };
  private readonly pages = new Map<number, Promise<Uint8Array>>();
  private whole: Uint8Array | null = null;
  private chain: Segment[] = [];
  private lastLargeEnd = -1;
  /** The page after the last run fetched for small reads, and how many pages that run had. */
  private seqPage = -1;
  private streak = 1;
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  private reResolved = false;
  private closed = false;
  private readonly pageSize: number;
  private readonly cachePages: number;
  private readonly window: number;
  private readonly concurrency: number;

  private constructor(
    /** The URL as resolved (a Hub resolve URL); re-resolved through when the pinned URL expires. */
    readonly url: string,
    readonly name: string,
    private pinnedUrl: string,
    private readonly pin: Pin,
    private readonly options: HttpSourceOptions,
  ) {
    this.pageSize = options.pageSize ?? 64 * KIB;
    this.cachePages = Math.max(4, options.cachePages ?? 64);
    this.window = options.window ?? 16 * MIB;
    this.concurrency = Math.max(1, options.concurrency ?? 4);
  }

  /** Probes `url` (one ranged GET: never HEAD, remote.md §2.3) and pins what it answers. */
  static async open(url: string, name: string, options: HttpSourceOptions = {}): Promise<HttpSource> {
    const counters: Counters = { requests: 0, bytesTransferred: 0 };
    const probe = options.probeBytes ?? 64 * KIB;
    const answer = await getRange({ url, start: 0, end: probe, pin: null, wholeMax: options.wholeFileMax ?? 16 * MIB, name }, options, counters);
    const size = answer.total ?? answer.body.byteLength;
    const source = new HttpSource(url, name, answer.url, { size, etag: answer.etag }, options);
    source.counters.requests = counters.requests;
    source.counters.bytesTransferred = counters.bytesTransferred;
    if (answer.status === 200 || answer.status === 416 || size <= answer.body.byteLength) {
      source.whole = answer.body.subarray(0, size);
    } else {
      source.store(0, answer.body);
      // the probe counts as the first run of a forward walk
      source.seqPage = Math.floor(answer.body.byteLength / source.pageSize);
    }
    return source;
  }

  get size(): number {
    return this.pin.size;
  }

  get etag(): string | null {
    return this.pin.etag;
  }

  /** Where reads go now: the URL after the probe's redirects. */
  get finalUrl(): string {
    return this.pinnedUrl;
  }

  stats(): TransferStats {
    return { size: this.size, requests: this.counters.requests, bytesTransferred: this.counters.bytesTransferred };
  }

  async read(offset: number, length: number, until = this.size): Promise<Uint8Array> {
    checkRange(this, offset, length);
    if (this.closed) throw new TensorportError('IoError', `${this.name} is closed`, { path: this.name });
    this.bytesRead += length;
    if (length === 0) return new Uint8Array(0);
    if (this.whole) return this.whole.subarray(offset, offset + length);
    if (length >= LARGE_READ) return this.readLarge(offset, length, until);
    return this.readPages(offset, length);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.chain = [];
    this.pages.clear();
  }

  /**
   * One request for [start, end), within the in-flight limit; a pinned URL that expired is
   * re-resolved once. `pooled`: the body goes into a pool buffer (see getRange), for data that is
   * handed out whole and not kept here.
   */
  private async fetch(start: number, end: number, pooled = false): Promise<Uint8Array> {
    await this.slot();
    try {
      try {
        return (await getRange({ url: this.pinnedUrl, start, end, pin: this.pin, name: this.name, pooled }, this.options, this.counters)).body;
      } catch (e) {
        // A signed CDN URL expires (X-Amz-Expires=3600 seen): go through the resolver again, same pin.
        const code = (e as TensorportError).code;
        if (this.reResolved || this.pinnedUrl === this.url || (code !== 'RemoteUnauthorized' && code !== 'RemoteForbidden' && code !== 'RemoteNotFound')) throw e;
        this.reResolved = true;
        const answer = await getRange({ url: this.url, start, end, pin: this.pin, name: this.name, pooled }, this.options, this.counters);
        this.pinnedUrl = answer.url;
        return answer.body;
      }
    } finally {
      this.release();
    }
  }

  private async slot(): Promise<void> {
    while (this.active >= this.concurrency) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.active++;
  }

  private release(): void {
    this.active--;
    this.waiting.shift()?.();
  }

  // --- small reads: a page cache --------------------------------------------------------------

  private store(start: number, bytes: Uint8Array): void {
    // only whole pages (and the file's last, short one) are cached
    const first = Math.ceil(start / this.pageSize);
    for (let p = first; ; p++) {
      const at = p * this.pageSize - start;
      const end = Math.min(at + this.pageSize, bytes.byteLength);
      if (at >= bytes.byteLength) break;
      if (end - at < this.pageSize && start + end !== this.size) break;
      this.remember(p, Promise.resolve(bytes.subarray(at, end)));
    }
  }

  private remember(page: number, data: Promise<Uint8Array>): void {
    this.pages.delete(page);
    this.pages.set(page, data);
    while (this.pages.size > this.cachePages) this.pages.delete(this.pages.keys().next().value as number);
  }

  private async readPages(offset: number, length: number): Promise<Uint8Array> {
    const ps = this.pageSize;
    const first = Math.floor(offset / ps);
    const last = Math.floor((offset + length - 1) / ps);
    const ordered: Promise<Uint8Array>[] = [];
    const missing: number[] = [];
    for (let p = first; p <= last; p++) {
      const hit = this.pages.get(p);
      if (hit) this.remember(p, hit);
      else missing.push(p);
      ordered.push(hit as Promise<Uint8Array>);
    }
    // Missing pages in runs (near runs merged), one request per run, shared by concurrent readers.
    for (let i = 0; i < missing.length; ) {
      let j = i;
      while (j + 1 < missing.length && missing[j + 1]! - missing[j]! <= GAP_PAGES) j++;
      const a = missing[i]!;
      let b = missing[j]!;
      // a parser walking forward: fetch ahead, doubling, within half the cache
      this.streak = a === this.seqPage ? Math.min(this.streak * 2, MAX_STREAK, this.cachePages >> 1) : 1;
      b = Math.min(Math.max(b, a + this.streak - 1), Math.ceil(this.size / ps) - 1);
      this.seqPage = b + 1;
      while (j + 1 < missing.length && missing[j + 1]! <= b) j++;
      const start = a * ps;
      const end = Math.min((b + 1) * ps, this.size);
      const run = this.fetch(start, end);
      run.catch(() => undefined);
      for (let p = a; p <= b; p++) {
        const page = run.then((bytes) => bytes.subarray(p * ps - start, Math.min((p + 1) * ps, this.size) - start));
        // A failed page is forgotten so that the next read retries it.
        page.catch(() => this.pages.get(p) === page && this.pages.delete(p));
        if (p <= last) ordered[p - first] = page;
        this.remember(p, page);
      }
      i = j + 1;
    }
    const parts = await Promise.all(ordered);
    if (parts.length === 1) {
      const at = offset - first * ps;
      return parts[0]!.subarray(at, at + length);
    }
    const out = new Uint8Array(length);
    let pos = first * ps;
    for (const part of parts) {
      const from = Math.max(offset, pos);
      const to = Math.min(offset + length, pos + part.byteLength);
      if (to > from) out.set(part.subarray(from - pos, to - pos), from - offset);
      pos += part.byteLength;
    }
    return out;
  }

  // --- large reads: direct, with read-ahead when sequential ------------------------------------

  private async readLarge(offset: number, length: number, until: number): Promise<Uint8Array> {
    const end = offset + length;
    // Not past the end of the caller's stream: the bytes after a tensor would be downloaded for nothing.
    const limit = Math.min(Math.max(until, end), this.size);
    while (this.chain.length > 0 && this.chain[0]!.end <= offset) this.chain.shift();
    if (this.chain.length > 0 && this.chain[0]!.start > offset) this.chain = [];
    const sequential = this.chain.length > 0 || offset === this.lastLargeEnd;
    this.lastLargeEnd = end;
    if (!sequential) return this.direct(offset, end);
    // Segments as long as the reads (a writer's chunks), `concurrency` of them ahead of the reader.
    const step = Math.min(Math.max(length, LARGE_READ), this.window);
    const extend = (): boolean => {
      const from = this.chain.length > 0 ? this.chain[this.chain.length - 1]!.end : offset;
      if (from >= limit) return false;
      const to = Math.min(from + step, limit);
      const data = this.fetch(from, to, true);
      data.catch(() => undefined);
      this.chain.push({ start: from, end: to, data });
      return true;
    };
    while ((this.chain.length === 0 || this.chain[this.chain.length - 1]!.end < end) && extend());
    let ahead = this.chain.filter((s) => s.start >= end).length;
    while (ahead < this.concurrency - 1 && extend()) ahead++;
    const covering = this.chain.filter((s) => s.end > offset && s.start < end);
    const parts = await Promise.all(covering.map((s) => s.data));
    if (covering.length === 1) {
      const seg = covering[0]!;
      if (seg.start === offset && seg.end === end) {
        // The whole segment goes to the caller, who may give its buffer away (FileSink.writeOwned
        // returns it to the pool): it must not stay here to be read again.
        this.chain.splice(this.chain.indexOf(seg), 1);
        return parts[0]!;
      }
      return parts[0]!.subarray(offset - seg.start, end - seg.start);
    }
    const out = new Uint8Array(length);
    covering.forEach((s, i) => {
      const from = Math.max(offset, s.start);
      const to = Math.min(end, s.end);
      out.set(parts[i]!.subarray(from - s.start, to - s.start), from - offset);
    });
    return out;
  }

  /** [offset, end) in windows fetched in parallel (within the in-flight limit). */
  private async direct(offset: number, end: number): Promise<Uint8Array> {
    if (end - offset <= this.window) return this.fetch(offset, end, true);
    const out = new Uint8Array(end - offset);
    const jobs: Promise<void>[] = [];
    for (let at = offset; at < end; at += this.window) {
      const to = Math.min(at + this.window, end);
      jobs.push(
        this.fetch(at, to, true).then((b) => {
          out.set(b, at - offset);
          recycleChunk(b);
        }),
      );
    }
    await Promise.all(jobs);
    return out;
  }
}
