import { TensorportError } from '../errors.ts';
import { u16 } from './le.ts';

export const EXTRA_ZIP64 = 0x0001;

/**
 * The body of the first extra field with `id` (APPNOTE 4.5.1: id u16, size u16, body), or null.
 * A record whose size runs past the extra area is refused (CPython: "Corrupt extra field").
 */
export function findExtra(extra: Uint8Array, id: number, at: number): Uint8Array | null {
  let p = 0;
  while (p + 4 <= extra.byteLength) {
    const len = u16(extra, p + 2);
    if (p + 4 + len > extra.byteLength) {
      throw new TensorportError('ZipInvalidCentralDirectory', `extra field 0x${u16(extra, p).toString(16).padStart(4, '0')} of ${len} bytes runs past the extra area`, { offset: at + p });
    }
    if (u16(extra, p) === id) return extra.subarray(p + 4, p + 4 + len);
    p += 4 + len;
  }
  return null;
}
