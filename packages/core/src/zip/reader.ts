import { TensorportError } from '../errors.ts';
import { SliceSource, readChunks, type ByteSource } from '../io/source.ts';
import { crcOf, type DeflateCodec } from './codec.ts';
import { METHOD_STORED, parseCentralDirectory, type CentralEntry } from './central-directory.ts';
import { readEndRecord, type EndRecord } from './end-record.ts';
import { inflateMember, verifyMember } from './inflate.ts';
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
}

export const DEFAULT_MAX_ZIP_ENTRIES = 1_000_000;
export const DEFAULT_MAX_CENTRAL_DIRECTORY = 64 * 1024 * 1024;
const INFLATE_INPUT_CHUNK = 1024 * 1024;
const PREFIX_INPUT_CHUNK = 16 * 1024;

/**
 * A ZIP archive read from the tail, random access: the end records, then the central directory in
 * one read, then each local header (checked against its directory entry). Nothing else is read
 * until a member is streamed.
 *
 * Refused at open: overlapping members (quoted-overlap bombs), duplicate names, encryption,
 * methods other than stored/deflate, members beyond the directory, disagreeing local headers.
 */
export class ZipArchive {
  private readonly byName: Map<string, ZipEntry>;

  private constructor(
    readonly source: ByteSource,
    readonly entries: readonly ZipEntry[],
    readonly end: EndRecord,
    private readonly codec: DeflateCodec | undefined,
  ) {
    this.byName = new Map(entries.map((e) => [e.name, e]));
  }

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
    rejectDuplicates(central);
    const entries: ZipEntry[] = [];
    const spans: Array<{ start: number; end: number; name: string }> = [];
    for (const e of central) {
      const x = await checkLocalHeader(source, e, end.cdOffset);
      entries.push({ ...e, dataOffset: x.dataOffset, stored: e.method === METHOD_STORED });
      spans.push({ start: e.localHeaderOffset, end: x.end, name: e.name });
    }
    rejectOverlaps(spans);
    return new ZipArchive(source, entries, end, options.codec);
  }

  get(name: string): ZipEntry | undefined {
    return this.byName.get(name);
  }

  /** A stored member's bytes as a window of the archive: no copy, no CRC check. */
  storedSource(entry: ZipEntry): SliceSource {
    if (!entry.stored) throw new TensorportError('ZipUnsupportedMethod', `member ${JSON.stringify(entry.name)} is deflated, not stored`, { tensor: entry.name });
    return new SliceSource(this.source, entry.dataOffset, entry.compressedSize, `${this.source.name}:${entry.name}`);
  }

  /**
   * The member's uncompressed bytes, never more than declared (ZipBomb) nor fewer (ZipSizeMismatch),
   * and CRC-checked unless `verify: false`. Errors come at the end of the stream.
   */
  stream(entry: ZipEntry, options: ZipStreamOptions = {}): AsyncIterable<Uint8Array> {
    return verifyMember(this.raw(entry, options.chunkSize), entry, options.verify === false ? null : crcOf(this.codec));
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

  private raw(entry: ZipEntry, chunkSize?: number): AsyncIterable<Uint8Array> {
    if (entry.stored) return readChunks(this.source, entry.dataOffset, entry.compressedSize, chunkSize);
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

export function openZip(source: ByteSource, options?: ZipReadOptions): Promise<ZipArchive> {
  return ZipArchive.open(source, options);
}

function rejectDuplicates(entries: readonly CentralEntry[]): void {
  const seen = new Map<string, CentralEntry>();
  for (const e of entries) {
    const first = seen.get(e.name);
    if (first) {
      throw new TensorportError('ZipDuplicateName', `member name ${JSON.stringify(e.name)} appears twice (entries ${first.index} and ${e.index})`, { offset: e.centralOffset, tensor: e.name, other: first.name });
    }
    seen.set(e.name, e);
  }
}

/** Every member's [local header, end of data or descriptor) must be disjoint from every other. */
function rejectOverlaps(spans: Array<{ start: number; end: number; name: string }>): void {
  const sorted = [...spans].sort((a, b) => a.start - b.start);
  for (let i = 1; i < sorted.length; i++) {
    const prev = sorted[i - 1]!;
    const cur = sorted[i]!;
    if (cur.start < prev.end) {
      throw new TensorportError('ZipOverlap', `member ${JSON.stringify(cur.name)} at ${cur.start} lies inside member ${JSON.stringify(prev.name)} [${prev.start}, ${prev.end})`, { offset: cur.start, tensor: cur.name, other: prev.name });
    }
  }
}
