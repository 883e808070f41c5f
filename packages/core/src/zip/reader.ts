import { TensorportError } from '../errors.ts';
import { SliceSource, readChunks, type ByteSource } from '../io/source.ts';
import { crcOf, type DeflateCodec } from './codec.ts';
import { parseCentralDirectory, type CentralEntry, type DirectoryEntry } from './central-directory.ts';
import { readEndRecord, type EndRecord } from './end-record.ts';
import { inflateMember, verifyMember } from './inflate.ts';
import { EXTRA_GUESS, HeaderWindow } from './header-window.ts';
import { checkLocalHeader } from './local-header.ts';

export interface ZipEntry extends CentralEntry {
  /** Absolute offset of the member's (possibly compressed) bytes. */
  readonly dataOffset: number;
  readonly stored: boolean;
}

export interface ZipReadOptions {
  /** Needed only to read deflated members. */
  codec?: DeflateCodec;
  /** Refuse directories with more entries (default 1,000,000). */
  maxEntries?: number;
  /** Refuse directories larger than this, in bytes; the directory is read in one piece (default 64 MiB). */
  maxCentralDirectoryBytes?: number;
}

export interface ZipStreamOptions {
  /** Read size for the member's bytes (default 1 MiB compressed, 8 MiB stored). */
  chunkSize?: number;
  /** Verify the CRC-32 while streaming (default true). Sizes are always enforced. */
  verify?: boolean;
  /**
   * Stored members: the first `splitAt` bytes come as a chunk of their own and the reads after it
   * start there (npz passes its .npy header length, so the array data arrives in whole read buffers
   * that a sink writes without copying them). Ignored for deflated members.
   */
  splitAt?: number;
}

export const DEFAULT_MAX_ZIP_ENTRIES = 1_000_000;
export const DEFAULT_MAX_CENTRAL_DIRECTORY = 64 * 1024 * 1024;
const INFLATE_INPUT_CHUNK = 1024 * 1024;
const PREFIX_INPUT_CHUNK = 16 * 1024;

/**
 * A ZIP archive read from the tail, random access: the end records, then the central directory in
 * one read, then every local header (checked against its directory entry) through coalesced
 * windows. Nothing else is read until a member is streamed.
 *
 * Refused at open: overlapping members (quoted-overlap bombs), duplicate names, encryption,
 * methods other than stored/deflate, members beyond the directory, disagreeing local headers.
 */
export class ZipArchive {
  private constructor(
    readonly source: ByteSource,
    readonly entries: readonly ZipEntry[],
    readonly end: EndRecord,
    private readonly codec: DeflateCodec | undefined,
    /** Name → index in `entries`. */
    private readonly byName: ReadonlyMap<string, number>,
  ) {}

  static async open(source: ByteSource, options: ZipReadOptions = {}): Promise<ZipArchive> {
    const end = await readEndRecord(source);
    const maxEntries = options.maxEntries ?? DEFAULT_MAX_ZIP_ENTRIES;
    const maxCd = options.maxCentralDirectoryBytes ?? DEFAULT_MAX_CENTRAL_DIRECTORY;
    if (end.entryCount > maxEntries) {
      throw new TensorportError('ZipLimitExceeded', `archive declares ${end.entryCount} entries; the limit is ${maxEntries} (option maxEntries)`, { offset: end.eocdOffset, path: source.name });
    }
    if (end.cdSize > maxCd) {
      throw new TensorportError('ZipLimitExceeded', `central directory is ${end.cdSize} bytes; the limit is ${maxCd} (option maxCentralDirectoryBytes)`, { offset: end.cdOffset, path: source.name });
    }
    if (end.cdSize < end.entryCount * 46) {
      throw new TensorportError('ZipInvalidCentralDirectory', `central directory of ${end.cdSize} bytes cannot hold ${end.entryCount} entries`, { offset: end.cdOffset, path: source.name });
    }
    const cd = end.cdSize > 0 ? await source.read(end.cdOffset, end.cdSize) : new Uint8Array(0);
    const central = parseCentralDirectory(cd, end.cdOffset, end.entryCount);
    const byName = indexNames(central);
    return new ZipArchive(source, await checkMembers(source, central, end.cdOffset), end, options.codec, byName);
  }

  get(name: string): ZipEntry | undefined {
    const i = this.byName.get(name);
    return i === undefined ? undefined : this.entries[i];
  }

  /** A stored member's bytes as a window of the archive: no copy, no CRC check. */
  storedSource(entry: ZipEntry): SliceSource {
    if (!entry.stored) throw new TensorportError('ZipUnsupportedMethod', `member ${JSON.stringify(entry.name)} is deflated, not stored`, { tensor: entry.name });
    return new MemberSource(this.source, entry);
  }

  /**
   * The member's uncompressed bytes, never more than declared (ZipBomb) nor fewer (ZipSizeMismatch),
   * and CRC-checked unless `verify: false`. Errors come at the end of the stream.
   */
  stream(entry: ZipEntry, options: ZipStreamOptions = {}): AsyncIterable<Uint8Array> {
    return verifyMember(this.raw(entry, options.chunkSize, options.splitAt), entry, options.verify === false ? null : crcOf(this.codec));
  }

  /**
   * The first `length` uncompressed bytes (fewer if the member is shorter), unverified. A deflated
   * member is inflated only as far as needed, from small input pieces, so a bomb costs little here.
   */
  async readPrefix(entry: ZipEntry, length: number): Promise<Uint8Array> {
    const want = Math.min(length, entry.uncompressedSize);
    if (entry.stored) return (await this.source.read(entry.dataOffset, want)).slice();
    const out = new Uint8Array(want);
    let n = 0;
    if (want === 0) return out;
    for await (const chunk of this.raw(entry, PREFIX_INPUT_CHUNK)) {
      const take = Math.min(chunk.byteLength, want - n);
      out.set(chunk.subarray(0, take), n);
      n += take;
      if (n === want) break;
    }
    return out.subarray(0, n);
  }

  /** True when streaming `entry` is mostly work off the JS thread: a deflated member and a codec that inflates on a thread pool. */
  offThread(entry: ZipEntry): boolean {
    return !entry.stored && this.codec?.offThread === true;
  }

  private raw(entry: ZipEntry, chunkSize?: number, splitAt = 0): AsyncIterable<Uint8Array> {
    if (entry.stored) {
      const head = Math.min(Math.max(splitAt, 0), entry.compressedSize);
      if (head === 0) return readChunks(this.source, entry.dataOffset, entry.compressedSize, chunkSize);
      return chain(readChunks(this.source, entry.dataOffset, head), readChunks(this.source, entry.dataOffset + head, entry.compressedSize - head, chunkSize));
    }
    if (!this.codec) {
      throw new TensorportError('ZipUnsupportedMethod', `member ${JSON.stringify(entry.name)} is deflated and no DEFLATE codec was given`, { tensor: entry.name });
    }
    const input = readChunks(this.source, entry.dataOffset, entry.compressedSize, chunkSize ?? INFLATE_INPUT_CHUNK);
    return inflateMember(this.codec, input, entry);
  }

  close(): Promise<void> {
    return this.source.close();
  }
}

/** A stored member's window, named `archive:member` when a message asks (a large .pt has 100,000). */
class MemberSource extends SliceSource {
  constructor(
    archive: ByteSource,
    private readonly entry: ZipEntry,
  ) {
    super(archive, entry.dataOffset, entry.compressedSize);
  }
  override get name(): string {
    return `${this.parent.name}:${this.entry.name}`;
  }
}

async function* chain(...parts: AsyncIterable<Uint8Array>[]): AsyncGenerator<Uint8Array> {
  for (const p of parts) yield* p;
}

export function openZip(source: ByteSource, options?: ZipReadOptions): Promise<ZipArchive> {
  return ZipArchive.open(source, options);
}

/**
 * Every local header checked against its directory entry, in file order through a `HeaderWindow`
 * (a few large reads instead of two or three small ones per member), then the overlap check on the
 * exact extents. All of it before the archive is returned: no member is ever handed out unchecked.
 */
async function checkMembers(source: ByteSource, central: DirectoryEntry[], limit: number): Promise<ZipEntry[]> {
  const order = fileOrder(central);
  const plan = { at: new Float64Array(order.length), estimate: new Float64Array(order.length) };
  order.forEach((i, k) => {
    const e = central[i]!;
    plan.at[k] = e.localHeaderOffset;
    plan.estimate[k] = 30 + e.nameLength + EXTRA_GUESS;
  });
  const window = new HeaderWindow(source, plan, limit);
  const read = (offset: number, length: number) => window.read(offset, length);
  // each member's extent, in file order, for the overlap check
  const ends = new Float64Array(order.length);
  for (let k = 0; k < order.length; k++) {
    const e = central[order[k]!]!;
    const x = await checkLocalHeader(read, e, limit);
    e.dataOffset = x.dataOffset;
    ends[k] = x.end;
  }
  rejectOverlaps(central, order, ends);
  return central;
}

/** Indices of `central` by local header offset; directories are nearly always in file order already. */
function fileOrder(central: readonly CentralEntry[]): number[] {
  const order = central.map((_, i) => i);
  for (let i = 1; i < central.length; i++) {
    if (central[i]!.localHeaderOffset < central[i - 1]!.localHeaderOffset) {
      return order.sort((a, b) => central[a]!.localHeaderOffset - central[b]!.localHeaderOffset);
    }
  }
  return order;
}

/** Name → index; a name seen twice is refused (CPython lets the last one win silently). */
function indexNames(entries: readonly CentralEntry[]): Map<string, number> {
  const seen = new Map<string, number>();
  for (const e of entries) {
    const first = seen.get(e.name);
    if (first !== undefined) {
      throw new TensorportError('ZipDuplicateName', `member name ${JSON.stringify(e.name)} appears twice (entries ${first} and ${e.index})`, { offset: e.centralOffset, tensor: e.name, other: e.name });
    }
    seen.set(e.name, e.index);
  }
  return seen;
}

/**
 * Every member's [local header, end of data or descriptor) must be disjoint from every other;
 * `order` sorts them by start, so each one ending before the next one starts is enough.
 */
function rejectOverlaps(entries: readonly CentralEntry[], order: readonly number[], ends: Float64Array): void {
  for (let k = 1; k < order.length; k++) {
    const prev = entries[order[k - 1]!]!;
    const cur = entries[order[k]!]!;
    if (cur.localHeaderOffset < ends[k - 1]!) {
      throw new TensorportError('ZipOverlap', `member ${JSON.stringify(cur.name)} at ${cur.localHeaderOffset} lies inside member ${JSON.stringify(prev.name)} [${prev.localHeaderOffset}, ${ends[k - 1]})`, { offset: cur.localHeaderOffset, tensor: cur.name, other: prev.name });
    }
  }
}
