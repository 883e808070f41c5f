import { TensorportError } from '../errors.ts';
import { FLAG_DATA_DESCRIPTOR, FLAG_ENCRYPTED, type CentralEntry } from './central-directory.ts';
import { EXTRA_ZIP64, findExtra } from './extra-fields.ts';
import { bytesEqual, u16, u32 } from './le.ts';

export const SIG_LOCAL = 0x04034b50;
export const SIG_DESCRIPTOR = 0x08074b50;
const LOCAL_SIZE = 30;

/** Positional reads of the archive (`ByteSource.read`, or a `HeaderWindow` over it). */
export type ReadAt = (offset: number, length: number) => Promise<Uint8Array>;

/** Where a member's bytes are, once its local header agrees with the directory. */
export interface MemberExtent {
  readonly dataOffset: number;
  /** End of the member: data plus its data descriptor, if any. */
  readonly end: number;
}

/**
 * Reads the local header (APPNOTE 4.3.7) of `e` and checks it against the central entry: same
 * name bytes, method and flag bits 0 and 3; and, unless sizes are deferred to a data descriptor
 * (bit 3), the same CRC and sizes (0xFFFFFFFF sizes are compared through the local 0x0001 extra,
 * which holds both sizes as numpy and CPython write it). Everything must end before `limit`.
 */
export async function checkLocalHeader(read: ReadAt, e: CentralEntry, limit: number): Promise<MemberExtent> {
  const at = e.localHeaderOffset;
  // No closure or object is made on the way through: this runs once per member, 100,000 times
  // for a large torch checkpoint (where, q and mismatch build the error only on failure).
  if (at + LOCAL_SIZE > limit) {
    throw new TensorportError('ZipMemberOutOfBounds', `local header of ${q(e)} at ${at} is not before the central directory (${limit})`, where(e));
  }
  const h = await read(at, LOCAL_SIZE);
  if (u32(h, 0) !== SIG_LOCAL) {
    throw new TensorportError('ZipLocalHeaderMismatch', `no local header signature at ${at} for ${q(e)}`, where(e));
  }
  const flags = u16(h, 6);
  const nameLen = u16(h, 26);
  const extraLen = u16(h, 28);
  const dataOffset = at + LOCAL_SIZE + nameLen + extraLen;
  if (dataOffset > limit) {
    throw new TensorportError('ZipMemberOutOfBounds', `local header of ${q(e)} runs past the central directory (${limit})`, where(e));
  }
  const tail = await read(at + LOCAL_SIZE, nameLen + extraLen);
  if (!bytesEqual(tail.subarray(0, nameLen), e.nameBytes)) {
    throw mismatch(e, `name ${JSON.stringify(new TextDecoder().decode(tail.subarray(0, nameLen)))}`);
  }
  if (u16(h, 8) !== e.method) throw mismatch(e, `method ${u16(h, 8)} vs ${e.method}`);
  if ((flags & FLAG_ENCRYPTED) !== (e.flags & FLAG_ENCRYPTED)) {
    throw new TensorportError('ZipEncrypted', `local header of ${q(e)} is flagged encrypted`, where(e));
  }
  if ((flags & FLAG_DATA_DESCRIPTOR) !== (e.flags & FLAG_DATA_DESCRIPTOR)) throw mismatch(e, 'data descriptor flag');
  if (!(flags & FLAG_DATA_DESCRIPTOR)) {
    if (u32(h, 14) !== e.crc32) throw mismatch(e, `CRC-32 ${hex(u32(h, 14))} vs ${hex(e.crc32)}`);
    let csize = u32(h, 18);
    let usize = u32(h, 22);
    if (csize === 0xffffffff || usize === 0xffffffff) {
      const z = findExtra(tail.subarray(nameLen), EXTRA_ZIP64, at + LOCAL_SIZE + nameLen);
      // Without the extra (or with a short one) the local sizes say nothing: the directory rules.
      if (z && z.byteLength >= 16) {
        usize = u32(z, 0) + u32(z, 4) * 0x100000000;
        csize = u32(z, 8) + u32(z, 12) * 0x100000000;
      } else {
        usize = e.uncompressedSize;
        csize = e.compressedSize;
      }
    }
    if (csize !== e.compressedSize || usize !== e.uncompressedSize) {
      throw mismatch(e, `sizes ${csize}/${usize} vs ${e.compressedSize}/${e.uncompressedSize} (compressed/uncompressed)`);
    }
  }
  const dataEnd = dataOffset + e.compressedSize;
  if (dataEnd > limit) {
    throw new TensorportError('ZipMemberOutOfBounds', `data of ${q(e)} [${dataOffset}, ${dataEnd}) runs past the central directory (${limit})`, { offset: dataOffset, tensor: e.name });
  }
  if (!(flags & FLAG_DATA_DESCRIPTOR)) return { dataOffset, end: dataEnd };
  return { dataOffset, end: dataEnd + (await checkDescriptor(read, e, dataEnd, limit)) };
}

/**
 * A data descriptor (4.3.9) follows the data: an optional signature, the CRC, then both sizes in
 * 4 bytes each, or 8 under ZIP64 (CPython and PyTorch write 24 bytes past 4 GiB, and PyTorch even for
 * small members there). The form that repeats the directory's values is the one; returns its length.
 */
async function checkDescriptor(read: ReadAt, e: CentralEntry, at: number, limit: number): Promise<number> {
  const d = await read(at, Math.min(24, limit - at));
  for (const [sig, w] of DESCRIPTOR_FORMS) {
    const len = sig + 4 + 2 * w;
    if (len > d.byteLength || (sig && u32(d, 0) !== SIG_DESCRIPTOR)) continue;
    if (u32(d, sig) === e.crc32 && sizeField(d, sig + 4, w) === e.compressedSize && sizeField(d, sig + 4 + w, w) === e.uncompressedSize) return len;
  }
  throw new TensorportError('ZipDataDescriptorMismatch', `data descriptor of ${JSON.stringify(e.name)} at ${at} does not repeat the directory's CRC and sizes`, { offset: at, tensor: e.name });
}

/** [signature bytes, size width] of each data descriptor form, the most specific first. */
const DESCRIPTOR_FORMS: ReadonlyArray<readonly [number, number]> = [[4, 8], [4, 4], [0, 8], [0, 4]];

function sizeField(d: Uint8Array, o: number, width: number): number {
  return width === 4 ? u32(d, o) : u32(d, o) + u32(d, o + 4) * 0x100000000;
}

function where(e: CentralEntry): { offset: number; tensor: string } {
  return { offset: e.localHeaderOffset, tensor: e.name };
}

function q(e: CentralEntry): string {
  return JSON.stringify(e.name);
}

function mismatch(e: CentralEntry, what: string): TensorportError {
  return new TensorportError('ZipLocalHeaderMismatch', `local header of ${q(e)} at ${e.localHeaderOffset} disagrees with the central directory: ${what}`, where(e));
}

function hex(v: number): string {
  return `0x${v.toString(16).padStart(8, '0')}`;
}
