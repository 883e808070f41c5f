import { TensorportError } from '../errors.ts';
import type { ByteSource } from '../io/source.ts';
import { u16, u32, u64 } from './le.ts';

export const SIG_EOCD = 0x06054b50;
export const SIG_ZIP64_LOCATOR = 0x07064b50;
export const SIG_ZIP64_EOCD = 0x06064b50;
const EOCD_SIZE = 22;
const LOCATOR_SIZE = 20;
const ZIP64_EOCD_SIZE = 56;
const MAX_COMMENT = 0xffff;

/** Where the central directory is, from the end record(s). */
export interface EndRecord {
  readonly entryCount: number;
  readonly cdOffset: number;
  readonly cdSize: number;
  /** The CD must end here: the ZIP64 end record if present, else the end record. */
  readonly cdLimit: number;
  readonly eocdOffset: number;
  readonly zip64: boolean;
}

/**
 * Reads the end of central directory record (EOCD, APPNOTE 4.3.16) and, when a ZIP64 locator sits
 * right before it, the ZIP64 end record (4.3.14–15). The EOCD is found by scanning back over the
 * last 64 KiB + 22 bytes for a signature whose comment length ends exactly at the end of the file,
 * nearest the end first.
 *
 * The other readers of these files choose differently: miniz (torch.load) takes the last signature
 * with 22 bytes after it, whatever its comment length; CPython's zipfile (np.load) takes the
 * signature at size-22 if its comment length is 0, else the last signature in the tail. A fake
 * record in a comment would send them to a central directory we never read, so any signature
 * after ours is refused: then all three read the same record. The same goes for where the
 * directory is: zipfile looks for it right before the end records (it ignores the ZIP64 locator's
 * offset and the directory offset, to allow prepended data), miniz and we use the offsets, so the
 * directory must end exactly where the ZIP64 end record (exactly 56 bytes, right before its
 * locator) or the end record begins.
 */
export async function readEndRecord(source: ByteSource): Promise<EndRecord> {
  const size = source.size;
  const tailLen = Math.min(size, EOCD_SIZE + MAX_COMMENT);
  const tail = tailLen > 0 ? await source.read(size - tailLen, tailLen) : new Uint8Array(0);
  let at = -1;
  for (let i = tailLen - EOCD_SIZE; i >= 0; i--) {
    if (u32(tail, i) === SIG_EOCD && i + EOCD_SIZE + u16(tail, i + 20) === tailLen) {
      at = i;
      break;
    }
  }
  if (at < 0) throw await noEndRecord(source);
  const eocdOffset = size - tailLen + at;
  const other = otherChoice(tail, at);
  if (other !== null) {
    throw new TensorportError(
      'ZipAmbiguousEndRecord',
      `${source.name}: another end record signature at ${size - tailLen + other} follows the end record at ${eocdOffset}: torch (miniz) and Python's zipfile would read the directory it points to`,
      { offset: size - tailLen + other, path: source.name },
    );
  }
  const disk = u16(tail, at + 4);
  const cdDisk = u16(tail, at + 6);
  let diskEntries = u16(tail, at + 8);
  let entryCount = u16(tail, at + 10);
  let cdSize = u32(tail, at + 12);
  let cdOffset = u32(tail, at + 16);
  if (disk !== 0 || cdDisk !== 0) {
    throw new TensorportError('ZipMultiDisk', `end record names disk ${disk} (directory on disk ${cdDisk}); multi-disk archives are not supported`, { offset: eocdOffset });
  }

  let cdLimit = eocdOffset;
  let zip64 = false;
  if (eocdOffset >= LOCATOR_SIZE) {
    const loc = await source.read(eocdOffset - LOCATOR_SIZE, LOCATOR_SIZE);
    if (u32(loc, 0) === SIG_ZIP64_LOCATOR) {
      const locAt = eocdOffset - LOCATOR_SIZE;
      const recDisk = u32(loc, 4);
      const totalDisks = u32(loc, 16);
      if (recDisk !== 0 || totalDisks > 1) {
        throw new TensorportError('ZipMultiDisk', `ZIP64 locator names disk ${recDisk} of ${totalDisks}`, { offset: locAt });
      }
      const recOffset = u64(loc, 8, 'ZipInvalidZip64', 'ZIP64 end record offset', locAt);
      if (recOffset + ZIP64_EOCD_SIZE !== locAt) {
        throw new TensorportError('ZipInvalidZip64', `ZIP64 end record at ${recOffset} is not the 56 bytes right before its locator at ${locAt} (where Python's zipfile reads it)`, { offset: locAt });
      }
      const rec = await source.read(recOffset, ZIP64_EOCD_SIZE);
      if (u32(rec, 0) !== SIG_ZIP64_EOCD) {
        throw new TensorportError('ZipInvalidZip64', `no ZIP64 end record signature at ${recOffset}`, { offset: recOffset });
      }
      const z = {
        disk: u32(rec, 16),
        cdDisk: u32(rec, 20),
        diskEntries: u64(rec, 24, 'ZipInvalidZip64', 'ZIP64 entry count', recOffset),
        entries: u64(rec, 32, 'ZipInvalidZip64', 'ZIP64 entry count', recOffset),
        cdSize: u64(rec, 40, 'ZipInvalidZip64', 'ZIP64 directory size', recOffset),
        cdOffset: u64(rec, 48, 'ZipInvalidZip64', 'ZIP64 directory offset', recOffset),
      };
      if (z.disk !== 0 || z.cdDisk !== 0) {
        throw new TensorportError('ZipMultiDisk', `ZIP64 end record names disk ${z.disk} (directory on disk ${z.cdDisk})`, { offset: recOffset });
      }
      // A saturated EOCD field defers to the ZIP64 record; an unsaturated one must agree with it.
      diskEntries = pick(diskEntries, 0xffff, z.diskEntries, 'entry count', recOffset);
      entryCount = pick(entryCount, 0xffff, z.entries, 'entry count', recOffset);
      cdSize = pick(cdSize, 0xffffffff, z.cdSize, 'directory size', recOffset);
      cdOffset = pick(cdOffset, 0xffffffff, z.cdOffset, 'directory offset', recOffset);
      cdLimit = recOffset;
      zip64 = true;
    }
  }
  if (diskEntries !== entryCount) {
    throw new TensorportError('ZipMultiDisk', `${diskEntries} of ${entryCount} entries on this disk`, { offset: eocdOffset });
  }
  if (cdOffset + cdSize > cdLimit) {
    throw new TensorportError(
      'ZipTruncated',
      `central directory [${cdOffset}, ${cdOffset + cdSize}) runs past its end record at ${cdLimit}`,
      { offset: cdOffset },
    );
  }
  if (cdOffset + cdSize !== cdLimit) {
    throw new TensorportError(
      'ZipInvalidCentralDirectory',
      `central directory [${cdOffset}, ${cdOffset + cdSize}) ends ${cdLimit - cdOffset - cdSize} bytes before its end record at ${cdLimit}: Python's zipfile would read a directory at ${cdLimit - cdSize} instead`,
      { offset: cdOffset + cdSize },
    );
  }
  return { entryCount, cdOffset, cdSize, cdLimit, eocdOffset, zip64 };
}

/**
 * Where miniz or zipfile would find an end record other than ours (at `at` in `tail`), or null
 * when both pick ours. Both take the last signature; a signature in the last 21 bytes makes zipfile
 * refuse the file (fine) but not miniz, which skips it.
 */
function otherChoice(tail: Uint8Array, at: number): number | null {
  for (let i = tail.byteLength - 4; i > at; i--) if (u32(tail, i) === SIG_EOCD && tail.byteLength - i >= EOCD_SIZE) return i;
  return null;
}

function pick(v32: number, saturated: number, v64: number, what: string, at: number): number {
  if (v32 === saturated || v32 === v64) return v64;
  throw new TensorportError('ZipInvalidZip64', `end record ${what} ${v32} disagrees with the ZIP64 end record (${v64})`, { offset: at });
}

/** A file that starts like a ZIP but has no end record was most likely cut short. */
async function noEndRecord(source: ByteSource): Promise<TensorportError> {
  const head = source.size >= 4 ? await source.read(0, 4) : new Uint8Array(0);
  if (head.byteLength === 4 && u32(head, 0) === 0x04034b50) {
    return new TensorportError('ZipTruncated', `${source.name}: starts with a ZIP local header but has no end of central directory record (truncated?)`, { offset: source.size, path: source.name });
  }
  return new TensorportError('ZipEndRecordNotFound', `${source.name}: no ZIP end of central directory record in the last ${Math.min(source.size, EOCD_SIZE + MAX_COMMENT)} bytes`, { offset: source.size, path: source.name });
}
