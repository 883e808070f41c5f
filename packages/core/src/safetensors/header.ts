import { TensorportError, toFinding, type Finding } from '../errors.ts';
import type { DType } from '../dtype.ts';
import type { ByteSource } from '../io/source.ts';
import { checkLayout, decodeHeaderJson } from './validate.ts';

/**
 * Reading a safetensors header: `[u64 LE N][N bytes of UTF-8 JSON][data]`, checked in the
 * reference's order (safetensors 0.8.0 `SafeTensors::read_metadata`):
 * HeaderTooSmall → HeaderTooLarge → InvalidHeaderLength → InvalidHeaderUtf8 → JSON/structure →
 * layout (InvalidOffset, ValidationOverflow, MisalignedSlice, TensorInvalidInfo) →
 * MetadataIncompleteBuffer.
 */

/** `MAX_HEADER_SIZE` in the reference: 10^8 bytes (not 100 MiB); N equal to it is allowed. */
export const MAX_HEADER_SIZE = 100_000_000;

export interface HeaderTensor {
  name: string;
  dtype: DType;
  /** Dims; exact unless `exactShape` is set (a dim above 2^53, only possible with 0 elements). Shared between tensors of one shape: read-only. */
  shape: readonly number[];
  /** Exact dims, present only when some dim exceeds 2^53. */
  exactShape?: bigint[];
  /** Byte range relative to the data section (dataStart). */
  begin: number;
  end: number;
  /** File offset of the tensor's key in the header. */
  entryOffset: number;
}

export interface SafetensorsHeader {
  /** N: header bytes, padding included. */
  headerLength: number;
  /** 8 + N: file offset of the data section. */
  dataStart: number;
  fileSize: number;
  metadata: Map<string, string> | null;
  /** Sorted by (begin, end): the order of the data. */
  tensors: HeaderTensor[];
  warnings: Finding[];
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Steps 2–3: N against the limit and the file size. Returns N as a number (≤ 10^8). */
export function checkHeaderLength(n: bigint, fileSize: bigint): number {
  if (n > BigInt(MAX_HEADER_SIZE)) {
    throw new TensorportError('HeaderTooLarge', `header too large: N = ${n} bytes exceeds the limit of ${MAX_HEADER_SIZE} (is this really a safetensors file?)`, { offset: 0 });
  }
  if (8n + n > fileSize) {
    throw new TensorportError('InvalidHeaderLength', `invalid header length: N = ${n} but only ${fileSize < 8n ? 0n : fileSize - 8n} bytes follow the 8-byte prefix`, { offset: 0 });
  }
  return Number(n);
}

/**
 * Parses and validates a header given its N bytes (those after the 8-byte prefix). `headerLength`
 * is the declared N (defaults to `headerBytes.length`); `fileSize` the whole file's size.
 * Throws TensorportError.
 */
export function parseHeaderBytes(headerBytes: Uint8Array, fileSize: number | bigint, headerLength: number | bigint = headerBytes.length): SafetensorsHeader {
  const size = BigInt(fileSize);
  if (size < 8n) throw new TensorportError('HeaderTooSmall', `header too small: the file has ${size} bytes, fewer than the 8-byte length prefix`, { offset: 0 });
  const n = checkHeaderLength(BigInt(headerLength), size);
  if (headerBytes.length < n) {
    throw new TensorportError('InvalidHeaderLength', `invalid header length: N = ${n} but ${headerBytes.length} header bytes were given`, { offset: 8 + headerBytes.length });
  }
  const bytes = headerBytes.length === n ? headerBytes : headerBytes.subarray(0, n);
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch (e) {
    const at = 8 + firstInvalidUtf8(bytes);
    throw new TensorportError('InvalidHeaderUtf8', `invalid UTF-8 in header at byte ${at}`, { offset: at, cause: e });
  }
  const declared = decodeHeaderJson(text, 8, bytes);
  const sorted = checkLayout(declared.tensors, BigInt(n), size);
  if (size > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new TensorportError('ValidationOverflow', `file size ${size} is beyond 2^53 bytes, which tensorport does not address`, {});
  }
  // The declared entries themselves: the layout check leaves no offset beyond 2^53 (exactOffsets).
  const tensors: HeaderTensor[] = sorted;
  return { headerLength: n, dataStart: 8 + n, fileSize: Number(size), metadata: declared.metadata, tensors, warnings: declared.warnings };
}

/** Reads and validates the header of `source`: 8 bytes, then N bytes, never more. */
export async function readHeader(source: ByteSource): Promise<SafetensorsHeader> {
  if (source.size < 8) throw new TensorportError('HeaderTooSmall', `header too small: ${source.name} has ${source.size} bytes, fewer than the 8-byte length prefix`, { offset: 0, path: source.name });
  const prefix = await source.read(0, 8);
  const n = new DataView(prefix.buffer, prefix.byteOffset, 8).getBigUint64(0, true);
  const length = checkHeaderLength(n, BigInt(source.size));
  const headerBytes = await source.read(8, length);
  return parseHeaderBytes(headerBytes, source.size, length);
}

export interface ValidationResult {
  valid: boolean;
  /** The first error, like the reference (which stops at the first). */
  errors: Finding[];
  warnings: Finding[];
  header?: SafetensorsHeader;
}

/** Validates structure and layout without reading tensor data. Never throws on bad input. */
export async function validateSafetensors(source: ByteSource): Promise<ValidationResult> {
  try {
    const header = await readHeader(source);
    return { valid: true, errors: [], warnings: header.warnings, header };
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
    const f = toFinding(e);
    if (f.path === undefined) f.path = source.name;
    return { valid: false, errors: [f], warnings: [] };
  }
}

/** Index of the first byte where `bytes` stops being well-formed UTF-8 (as Rust's `from_utf8`). */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  const n = bytes.length;
  while (i < n) {
    const b = bytes[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) need = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      if (b === 0xe0) lo = 0xa0;
      if (b === 0xed) hi = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      if (b === 0xf0) lo = 0x90;
      if (b === 0xf4) hi = 0x8f;
    } else return i;
    for (let k = 1; k <= need; k++) {
      const c = bytes[i + k];
      if (c === undefined) return i;
      if (k === 1 ? c < lo || c > hi : c < 0x80 || c > 0xbf) return i;
    }
    i += need + 1;
  }
  return n;
}
