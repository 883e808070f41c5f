import { TensorportError } from '../errors.ts';
import { EXTRA_ZIP64, findExtra } from './extra-fields.ts';
import { u16, u32, u64 } from './le.ts';
import { decodeName } from './names.ts';

export const SIG_CENTRAL = 0x02014b50;
const CENTRAL_SIZE = 46;

export const FLAG_ENCRYPTED = 0x0001;
export const FLAG_DATA_DESCRIPTOR = 0x0008;
export const FLAG_STRONG_ENCRYPTION = 0x0040;
export const FLAG_UTF8 = 0x0800;
export const METHOD_STORED = 0;
export const METHOD_DEFLATED = 8;

/** One central directory entry, with ZIP64 fields resolved. The directory is authoritative. */
export interface CentralEntry {
  readonly index: number;
  readonly name: string;
  readonly nameBytes: Uint8Array;
  readonly flags: number;
  readonly method: number;
  readonly crc32: number;
  readonly compressedSize: number;
  readonly uncompressedSize: number;
  readonly localHeaderOffset: number;
  /** Where this entry sits in the archive, for messages. */
  readonly centralOffset: number;
}

/**
 * A directory entry as parsed, and later (reader.ts) the archive's member: one object per member
 * (100,000 in a large .pt), so it keeps only where its record is in the directory buffer and
 * reads its fields from there on demand. A CRC-32 or an offset stored in a field of its own is a
 * boxed double in V8 once beyond 2^31, and every field 8 bytes: 160 bytes per entry that way, 72 now.
 */
export class DirectoryEntry implements CentralEntry {
  /** Where the member's bytes start; set once its local header is checked (reader.ts), -1 before. */
  dataOffset = -1;

  constructor(
    private readonly directory: Directory,
    /** Where this entry's record starts in the directory buffer. */
    private readonly at: number,
    readonly index: number,
    readonly name: string,
    /** The values its ZIP64 extra field holds, when its record saturates any. */
    private readonly wide: Zip64Values | null,
  ) {}

  get nameBytes(): Uint8Array {
    return this.directory.bytes.subarray(this.at + CENTRAL_SIZE, this.at + CENTRAL_SIZE + this.nameLength);
  }
  get nameLength(): number {
    return u16(this.directory.bytes, this.at + 28);
  }
  get flags(): number {
    return u16(this.directory.bytes, this.at + 8);
  }
  get method(): number {
    return u16(this.directory.bytes, this.at + 10);
  }
  get crc32(): number {
    return u32(this.directory.bytes, this.at + 16);
  }
  get compressedSize(): number {
    return this.wide?.compressedSize ?? u32(this.directory.bytes, this.at + 20);
  }
  get uncompressedSize(): number {
    return this.wide?.uncompressedSize ?? u32(this.directory.bytes, this.at + 24);
  }
  get localHeaderOffset(): number {
    return this.wide?.localHeaderOffset ?? u32(this.directory.bytes, this.at + 42);
  }
  get centralOffset(): number {
    return this.directory.base + this.at;
  }
  get stored(): boolean {
    return this.method === METHOD_STORED;
  }
}

/** The central directory's bytes and where they start in the archive: one per archive, shared by its entries. */
interface Directory {
  readonly bytes: Uint8Array;
  readonly base: number;
}

/** An entry's sizes and offset resolved through its ZIP64 extra field (each as read, or from the extra). */
interface Zip64Values {
  readonly uncompressedSize: number;
  readonly compressedSize: number;
  readonly localHeaderOffset: number;
}

/**
 * Parses `count` entries (APPNOTE 4.3.12) that must fill `bytes` exactly. Each 32-bit size or
 * offset saturated at 0xFFFFFFFF is taken from the 0x0001 extra, in the fixed order usize, csize,
 * offset, disk (4.5.3), whether or not the archive has a ZIP64 end record: numpy's compressed
 * members past 4 GiB live in archives without one.
 */
export function parseCentralDirectory(bytes: Uint8Array, base: number, count: number): DirectoryEntry[] {
  const entries: DirectoryEntry[] = [];
  const directory: Directory = { bytes, base };
  let p = 0;
  for (let index = 0; index < count; index++) {
    const at = base + p;
    if (p + CENTRAL_SIZE > bytes.byteLength) {
      throw new TensorportError('ZipInvalidCentralDirectory', `central directory ends inside entry ${index} of ${count}`, { offset: at });
    }
    if (u32(bytes, p) !== SIG_CENTRAL) {
      throw new TensorportError('ZipInvalidCentralDirectory', `no central directory signature for entry ${index} of ${count}`, { offset: at });
    }
    const flags = u16(bytes, p + 8);
    const method = u16(bytes, p + 10);
    const nameLen = u16(bytes, p + 28);
    const extraLen = u16(bytes, p + 30);
    const commentLen = u16(bytes, p + 32);
    const end = p + CENTRAL_SIZE + nameLen + extraLen + commentLen;
    if (end > bytes.byteLength) {
      throw new TensorportError('ZipInvalidCentralDirectory', `central directory entry ${index} runs past the directory`, { offset: at });
    }
    const nameBytes = bytes.subarray(p + CENTRAL_SIZE, p + CENTRAL_SIZE + nameLen);
    const name = decodeName(nameBytes, (flags & FLAG_UTF8) !== 0, at);
    const extra = bytes.subarray(p + CENTRAL_SIZE + nameLen, p + CENTRAL_SIZE + nameLen + extraLen);
    const z = zip64Fields(extra, at + CENTRAL_SIZE + nameLen, name);
    const uncompressedSize = z.next(u32(bytes, p + 24), 'uncompressed size');
    const compressedSize = z.next(u32(bytes, p + 20), 'compressed size');
    const localHeaderOffset = z.next(u32(bytes, p + 42), 'local header offset');
    const diskStart = u16(bytes, p + 34);
    const disk = diskStart === 0xffff ? z.nextDisk() : diskStart;
    if (disk !== 0) {
      throw new TensorportError('ZipMultiDisk', `member ${JSON.stringify(name)} starts on disk ${disk}`, { offset: at, tensor: name });
    }
    if (flags & (FLAG_ENCRYPTED | FLAG_STRONG_ENCRYPTION)) {
      throw new TensorportError('ZipEncrypted', `member ${JSON.stringify(name)} is encrypted (flags 0x${flags.toString(16).padStart(4, '0')})`, { offset: at, tensor: name });
    }
    if (method !== METHOD_STORED && method !== METHOD_DEFLATED) {
      throw new TensorportError('ZipUnsupportedMethod', `member ${JSON.stringify(name)} uses compression method ${method}; only 0 (stored) and 8 (deflate) are supported`, { offset: at, tensor: name });
    }
    if (method === METHOD_STORED && compressedSize !== uncompressedSize) {
      throw new TensorportError('ZipSizeMismatch', `stored member ${JSON.stringify(name)} has compressed size ${compressedSize} but uncompressed size ${uncompressedSize}`, { offset: at, tensor: name });
    }
    const wide = z.used ? { uncompressedSize, compressedSize, localHeaderOffset } : null;
    entries.push(new DirectoryEntry(directory, p, index, name, wide));
    p = end;
  }
  if (p !== bytes.byteLength) {
    throw new TensorportError('ZipInvalidCentralDirectory', `central directory has ${bytes.byteLength - p} bytes after its ${count} entries`, { offset: base + p });
  }
  return entries;
}

function zip64Fields(extra: Uint8Array, at: number, name: string) {
  const body = findExtra(extra, EXTRA_ZIP64, at);
  let p = 0;
  const missing = (what: string) =>
    new TensorportError('ZipInvalidZip64', `member ${JSON.stringify(name)} has its ${what} saturated (0xFFFFFFFF) but no ZIP64 extra field holds it`, { offset: at, tensor: name });
  return {
    /** True once a value came from the extra field. */
    used: false,
    next(v32: number, what: string): number {
      if (v32 !== 0xffffffff) return v32;
      if (!body || p + 8 > body.byteLength) throw missing(what);
      const v = u64(body, p, 'ZipInvalidZip64', `${name}: ZIP64 ${what}`, at);
      p += 8;
      this.used = true;
      return v;
    },
    nextDisk(): number {
      if (!body || p + 4 > body.byteLength) throw missing('disk number');
      return u32(body, p);
    },
  };
}
