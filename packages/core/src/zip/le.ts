import { TensorportError, type ErrorCode } from '../errors.ts';

/** Little-endian field access for ZIP records; offsets are relative to `b`. */
export function u16(b: Uint8Array, o: number): number {
  return b[o]! | (b[o + 1]! << 8);
}

export function u32(b: Uint8Array, o: number): number {
  return (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16)) + b[o + 3]! * 0x1000000;
}

/**
 * A u64 field as a number. Values past 2^53 cannot be a real size or offset in any source we can
 * read, so they are refused rather than rounded.
 */
export function u64(b: Uint8Array, o: number, code: ErrorCode, what: string, at: number): number {
  const v = u32(b, o) + u32(b, o + 4) * 0x100000000;
  if (!Number.isSafeInteger(v)) {
    throw new TensorportError(code, `${what} ${(BigInt(u32(b, o + 4)) << 32n) | BigInt(u32(b, o))} does not fit in 2^53`, { offset: at });
  }
  return v;
}

export function put16(b: Uint8Array, o: number, v: number): void {
  b[o] = v & 0xff;
  b[o + 1] = (v >>> 8) & 0xff;
}

export function put32(b: Uint8Array, o: number, v: number): void {
  put16(b, o, v & 0xffff);
  put16(b, o + 2, (v >>> 16) & 0xffff);
}

export function put64(b: Uint8Array, o: number, v: number): void {
  put32(b, o, v % 0x100000000);
  put32(b, o + 4, Math.floor(v / 0x100000000));
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}
