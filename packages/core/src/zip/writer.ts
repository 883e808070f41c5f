import { TensorportError } from '../errors.ts';
import { writeChunk, type ByteSink } from '../io/sink.ts';
import { crcOf, type Crc32Fn, type DeflateCodec } from './codec.ts';
import { FLAG_DATA_DESCRIPTOR, FLAG_UTF8, METHOD_DEFLATED, METHOD_STORED, SIG_CENTRAL } from './central-directory.ts';
import { SIG_EOCD, SIG_ZIP64_EOCD, SIG_ZIP64_LOCATOR } from './end-record.ts';
import { EXTRA_ZIP64 } from './extra-fields.ts';
import { put16, put32, put64 } from './le.ts';
import { SIG_DESCRIPTOR, SIG_LOCAL } from './local-header.ts';
import { encodeName } from './names.ts';

/** A sink that can also overwrite bytes it already wrote (a file); the ZIP writer patches local headers with it. */
export interface PatchableSink extends ByteSink {
  writeAt(offset: number, bytes: Uint8Array): Promise<void>;
}

export function isPatchableSink(sink: ByteSink): sink is PatchableSink {
  return typeof (sink as Partial<PatchableSink>).writeAt === 'function';
}

export interface ZipWriterOptions {
  /** Needed for deflated members; its `crc32` is used when present. */
  codec?: DeflateCodec;
  /** zlib level for deflated members (default 6, as CPython's zipfile). */
  level?: number;
  /** Use data descriptors even when the sink can patch (the layout of `np.savez` into a pipe). */
  dataDescriptors?: boolean;
}

export interface ZipMemberOptions {
  /** Deflate the member (needs the writer's codec); stored otherwise. */
  deflate?: boolean;
  /**
   * Start the member's data at a multiple of `align` bytes of the sink (counted from the sink's
   * first byte), padded inside the local header with an "FB" (0x4246) extra field as PyTorch does
   * (`inline_container.cc`, 64 bytes), so stored data can be memory-mapped. 1 to 32768.
   */
  align?: number;
}

export interface ZipMemberResult {
  readonly crc32: number;
  readonly size: number;
  readonly compressedSize: number;
}

interface Written extends ZipMemberResult {
  nameBytes: Uint8Array;
  flags: number;
  method: number;
  offset: number;
}

/** CPython's threshold (zipfile.ZIP64_LIMIT = 2^31 - 1): past it a field moves to a ZIP64 extra. */
const ZIP64_LIMIT = 0x7fffffff;
const ZIP64_VERSION = 45;
/** PyTorch's padding extra: id 'F','B' (little-endian 0x4246), then filler ('Z', as torch writes). */
export const EXTRA_TORCH_PADDING = 0x4246;
const PAD_FILL = 0x5a;
const MAX_ALIGN = 0x8000;
/** Unix, version 4.5: what CPython writes, so outputs compare byte for byte with numpy's. */
const MADE_BY = 0x032d;
/** 1980-01-01 00:00: numpy's members carry this fixed date, which keeps outputs deterministic. */
const DOS_DATE = 0x0021;
const EXTERNAL_ATTR = 0o600 << 16;

/**
 * Streams a ZIP archive laid out as CPython's zipfile does with `force_zip64=True` (numpy's savez):
 * every local header has a 20-byte ZIP64 extra and 0xFFFFFFFF sizes, directory entries get ZIP64
 * extras only for fields past 2^31 - 1, and a ZIP64 end record is added once the directory offset,
 * size or entry count needs one. Sizes and CRC-32 are computed while streaming; they reach the local
 * header by patching it (a `PatchableSink`) or else through a 24-byte data descriptor. A member
 * added with `align` also gets torch's "FB" padding extra in its local header only (the directory
 * entry does not repeat it, as in torch's files). Memory: one chunk plus the directory entries.
 */
export class ZipWriter {
  private readonly base: number;
  private readonly written: Written[] = [];
  private readonly names = new Set<string>();
  private readonly crcFn: Crc32Fn;
  private finished = false;

  constructor(
    private readonly sink: ByteSink,
    private readonly options: ZipWriterOptions = {},
  ) {
    this.base = sink.bytesWritten;
    this.crcFn = crcOf(options.codec);
  }

  private get pos(): number {
    return this.sink.bytesWritten - this.base;
  }

  async add(name: string, data: AsyncIterable<Uint8Array>, member: ZipMemberOptions = {}): Promise<ZipMemberResult> {
    if (this.finished) throw new Error('ZipWriter.add after finish');
    const align = member.align;
    if (align !== undefined && !(Number.isInteger(align) && align >= 1 && align <= MAX_ALIGN)) {
      throw new RangeError(`ZipWriter.add: align must be an integer from 1 to ${MAX_ALIGN}, got ${align}`);
    }
    if (this.names.has(name)) {
      throw new TensorportError('ZipDuplicateName', `member name ${JSON.stringify(name)} written twice`, { tensor: name });
    }
    const codec = this.options.codec;
    if (member.deflate && !codec) {
      throw new TensorportError('ZipUnsupportedMethod', `member ${JSON.stringify(name)}: deflate needs a codec`, { tensor: name });
    }
    this.names.add(name);
    const { bytes: nameBytes, utf8 } = encodeName(name);
    const patch = !this.options.dataDescriptors && isPatchableSink(this.sink);
    const flags = (utf8 ? FLAG_UTF8 : 0) | (patch ? 0 : FLAG_DATA_DESCRIPTOR);
    const method = member.deflate ? METHOD_DEFLATED : METHOD_STORED;
    const offset = this.pos;
    const pad = align === undefined ? null : padding(this.sink.bytesWritten + LOCAL_FIXED + nameBytes.byteLength + PAD_HEADER, align);
    await this.sink.write(localHeader(nameBytes, flags, method, 0, 0, 0, pad));

    let crc = 0;
    let size = 0;
    let compressedSize = 0;
    if (member.deflate) {
      const counted = async function* (this: ZipWriter): AsyncGenerator<Uint8Array> {
        for await (const chunk of data) {
          crc = this.crcFn(chunk, crc);
          size += chunk.byteLength;
          yield chunk;
        }
      }.call(this);
      for await (const chunk of codec!.deflateRaw(counted, this.options.level ?? 6)) {
        compressedSize += chunk.byteLength;
        await this.sink.write(chunk);
      }
    } else {
      // Stored: no generator in between (one per member is measurable with 100k small members).
      for await (const chunk of data) {
        crc = this.crcFn(chunk, crc);
        size += chunk.byteLength;
        await writeChunk(this.sink, chunk);
      }
      compressedSize = size;
    }

    if (patch) {
      await (this.sink as PatchableSink).writeAt(this.base + offset, localHeader(nameBytes, flags, method, crc, size, compressedSize, pad));
    } else {
      const d = new Uint8Array(24);
      put32(d, 0, SIG_DESCRIPTOR);
      put32(d, 4, crc);
      put64(d, 8, compressedSize);
      put64(d, 16, size);
      await this.sink.write(d);
    }
    const result = { crc32: crc, size, compressedSize };
    this.written.push({ ...result, nameBytes, flags, method, offset });
    return result;
  }

  /** Writes the central directory and end records. The caller commits the sink. */
  async finish(): Promise<void> {
    if (this.finished) return;
    this.finished = true;
    const cdOffset = this.pos;
    for (const w of this.written) await this.sink.write(centralHeader(w));
    const cdSize = this.pos - cdOffset;
    const count = this.written.length;
    if (count > 0xffff || cdOffset > ZIP64_LIMIT || cdSize > ZIP64_LIMIT) {
      const recAt = this.pos;
      const r = new Uint8Array(56 + 20);
      put32(r, 0, SIG_ZIP64_EOCD);
      put64(r, 4, 44);
      put16(r, 12, ZIP64_VERSION);
      put16(r, 14, ZIP64_VERSION);
      put64(r, 24, count);
      put64(r, 32, count);
      put64(r, 40, cdSize);
      put64(r, 48, cdOffset);
      put32(r, 56, SIG_ZIP64_LOCATOR);
      put64(r, 64, recAt);
      put32(r, 72, 1);
      await this.sink.write(r);
    }
    const e = new Uint8Array(22);
    put32(e, 0, SIG_EOCD);
    put16(e, 8, Math.min(count, 0xffff));
    put16(e, 10, Math.min(count, 0xffff));
    put32(e, 12, Math.min(cdSize, 0xffffffff));
    put32(e, 16, Math.min(cdOffset, 0xffffffff));
    await this.sink.write(e);
  }
}

/** The local header before any padding: 30 bytes, the name, the 20-byte ZIP64 extra. */
const LOCAL_FIXED = 30 + 20;
const PAD_HEADER = 4;

/** Filler bytes that move `dataStart` (where the data would begin with an empty padding field) to a multiple of `align`. */
function padding(dataStart: number, align: number): number {
  return (align - (dataStart % align)) % align;
}

/**
 * CPython's `ZipInfo.FileHeader(zip64=True)`: 0xFFFFFFFF sizes, real ones in a 0x0001 extra;
 * then, when aligning, torch's "FB" extra of `pad` filler bytes (written even when `pad` is 0, as torch does).
 */
function localHeader(name: Uint8Array, flags: number, method: number, crc: number, size: number, csize: number, pad: number | null): Uint8Array {
  const padLen = pad === null ? 0 : PAD_HEADER + pad;
  const h = new Uint8Array(LOCAL_FIXED + name.byteLength + padLen);
  put32(h, 0, SIG_LOCAL);
  put16(h, 4, ZIP64_VERSION);
  put16(h, 6, flags);
  put16(h, 8, method);
  put16(h, 12, DOS_DATE);
  put32(h, 14, crc);
  put32(h, 18, 0xffffffff);
  put32(h, 22, 0xffffffff);
  put16(h, 26, name.byteLength);
  put16(h, 28, 20 + padLen);
  h.set(name, 30);
  const x = 30 + name.byteLength;
  put16(h, x, EXTRA_ZIP64);
  put16(h, x + 2, 16);
  put64(h, x + 4, size);
  put64(h, x + 12, csize);
  if (pad !== null) {
    put16(h, x + 20, EXTRA_TORCH_PADDING);
    put16(h, x + 22, pad);
    h.fill(PAD_FILL, x + 24);
  }
  return h;
}

function centralHeader(w: Written): Uint8Array {
  const z: number[] = [];
  const bigSizes = w.size > ZIP64_LIMIT || w.compressedSize > ZIP64_LIMIT;
  if (bigSizes) z.push(w.size, w.compressedSize);
  const bigOffset = w.offset > ZIP64_LIMIT;
  if (bigOffset) z.push(w.offset);
  const extraLen = z.length ? 4 + 8 * z.length : 0;
  const h = new Uint8Array(46 + w.nameBytes.byteLength + extraLen);
  put32(h, 0, SIG_CENTRAL);
  put16(h, 4, MADE_BY);
  put16(h, 6, ZIP64_VERSION);
  put16(h, 8, w.flags);
  put16(h, 10, w.method);
  put16(h, 14, DOS_DATE);
  put32(h, 16, w.crc32);
  put32(h, 20, bigSizes ? 0xffffffff : w.compressedSize);
  put32(h, 24, bigSizes ? 0xffffffff : w.size);
  put16(h, 28, w.nameBytes.byteLength);
  put16(h, 30, extraLen);
  put32(h, 38, EXTERNAL_ATTR);
  put32(h, 42, bigOffset ? 0xffffffff : w.offset);
  h.set(w.nameBytes, 46);
  if (z.length) {
    const x = 46 + w.nameBytes.byteLength;
    put16(h, x, EXTRA_ZIP64);
    put16(h, x + 2, 8 * z.length);
    z.forEach((v, i) => put64(h, x + 4 + 8 * i, v));
  }
  return h;
}
