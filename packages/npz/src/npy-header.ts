import { TensorportError, byteLength, type DType, type Finding } from '@tensorport/core';
import { descrToDtype, dtypeToDescr, type DescrOptions } from './descr.ts';
import { PyTuple, parsePyLiteral } from './literal.ts';

export const NPY_MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // \x93NUMPY
/** numpy's `_MAX_HEADER_SIZE`: np.load refuses longer headers unless told otherwise. */
export const DEFAULT_MAX_HEADER_SIZE = 10_000;
const ARRAY_ALIGN = 64;
const GROWTH_AXIS_MAX_DIGITS = 21;

export interface NpyHeader {
  readonly version: readonly [number, number];
  readonly descr: string;
  readonly dtype: DType;
  /** Bytes to reverse per unit (big-endian input), 0 when the data is already little-endian. */
  readonly swap: number;
  readonly fortranOrder: boolean;
  readonly shape: readonly number[];
  /** Magic + version + length field + header: where the array bytes start. Not always 64-aligned (MLX). */
  readonly dataOffset: number;
  readonly byteLength: number;
}

export interface NpyHeaderOptions extends DescrOptions {
  /** Longest header accepted, in bytes (default 10000, numpy's limit). */
  maxHeaderSize?: number;
}

export function startsWithNpyMagic(b: Uint8Array): boolean {
  return NPY_MAGIC.every((m, i) => b[i] === m);
}

/** Bytes needed to hold any acceptable header (what to read before `parseNpyHeader`). */
export function npyPrefixLength(options: NpyHeaderOptions): number {
  return 12 + (options.maxHeaderSize ?? DEFAULT_MAX_HEADER_SIZE);
}

/** numpy's headers fit in 128 bytes; a first read this long almost always suffices. */
const FIRST_READ = 256;

/**
 * Reads the header bytes through `read(length)` (which may return fewer at the end of the data):
 * a short first read, then exactly the declared header if it is longer and within the cap.
 */
export async function readNpyPrefix(read: (length: number) => Promise<Uint8Array>, options: NpyHeaderOptions): Promise<Uint8Array> {
  const cap = npyPrefixLength(options);
  const first = await read(Math.min(FIRST_READ, cap));
  if (first.byteLength < 12 || !startsWithNpyMagic(first)) return first;
  const major = first[6]!;
  const len = major === 1 ? first[8]! | (first[9]! << 8) : (first[8]! | (first[9]! << 8) | (first[10]! << 16)) + first[11]! * 0x1000000;
  const end = (major === 1 ? 10 : 12) + len;
  return end > first.byteLength && end <= cap ? read(end) : first;
}

/**
 * Parses magic, version (1.0, 2.0, 3.0), header length (u16 for 1.0, u32 after) and the header
 * dict from the first bytes of a .npy. `bytes` may be longer than the header; if it is shorter,
 * the file is truncated. The dict needs exactly numpy's three keys.
 */
export function parseNpyHeader(bytes: Uint8Array, tensor: string, options: NpyHeaderOptions, warn: (f: Finding) => void): NpyHeader {
  const where = { tensor, offset: 0 };
  if (bytes.byteLength < 10 || !startsWithNpyMagic(bytes)) {
    throw new TensorportError('NpyInvalidMagic', `${tensor}: not a .npy (no \\x93NUMPY magic)`, where);
  }
  const major = bytes[6]!;
  const minor = bytes[7]!;
  if (minor !== 0 || major < 1 || major > 3) {
    throw new TensorportError('NpyUnsupportedVersion', `${tensor}: .npy format version ${major}.${minor}; only 1.0, 2.0 and 3.0 exist`, { tensor, offset: 6 });
  }
  const lenSize = major === 1 ? 2 : 4;
  if (bytes.byteLength < 8 + lenSize) throw new TensorportError('NpyTruncated', `${tensor}: .npy ends inside its header length`, { tensor, offset: 8 });
  const headerLen = major === 1 ? bytes[8]! | (bytes[9]! << 8) : (bytes[8]! | (bytes[9]! << 8) | (bytes[10]! << 16)) + bytes[11]! * 0x1000000;
  const max = options.maxHeaderSize ?? DEFAULT_MAX_HEADER_SIZE;
  if (headerLen > max) {
    throw new TensorportError('NpyHeaderTooLarge', `${tensor}: .npy header is ${headerLen} bytes; the limit is ${max} (option maxHeaderSize)`, { tensor, offset: 8 });
  }
  const start = 8 + lenSize;
  const dataOffset = start + headerLen;
  if (bytes.byteLength < dataOffset) {
    throw new TensorportError('NpyTruncated', `${tensor}: .npy ends inside its ${headerLen}-byte header`, { tensor, offset: bytes.byteLength });
  }
  const raw = bytes.subarray(start, dataOffset);
  let text: string;
  if (major === 3) {
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(raw);
    } catch (cause) {
      throw new TensorportError('NpyInvalidHeader', `${tensor}: version 3.0 header is not valid UTF-8`, { tensor, offset: start, cause });
    }
  } else text = new TextDecoder('latin1').decode(raw);
  const dict = parsePyLiteral(text, start);
  const bad = (why: string): never => {
    throw new TensorportError('NpyInvalidHeader', `${tensor}: ${why}`, { tensor, offset: start });
  };
  if (!(dict instanceof Map)) return bad('header is not a dict');
  const keys = [...dict.keys()].sort();
  if (keys.join() !== 'descr,fortran_order,shape') return bad(`header keys are ${JSON.stringify(keys)}; expected descr, fortran_order, shape`);
  const fortranOrder = dict.get('fortran_order');
  if (typeof fortranOrder !== 'boolean') return bad("'fortran_order' must be True or False");
  const shapeV = dict.get('shape');
  if (!(shapeV instanceof PyTuple)) return bad("'shape' must be a tuple");
  const shape = shapeV.items.map((d) => {
    if (typeof d !== 'bigint' || d < 0n || d > BigInt(Number.MAX_SAFE_INTEGER)) return bad(`shape ${text.slice(0, 200)} holds something other than a non-negative integer`);
    return Number(d);
  });
  const descr = dict.get('descr');
  const { dtype, swap } = descrToDtype(descr, tensor, options, warn);
  return {
    version: [major, minor], descr: descr as string, dtype, swap, fortranOrder, shape, dataOffset,
    byteLength: byteLength(dtype, shape, tensor),
  };
}

/** Python's `repr` of a shape tuple: `()`, `(6,)`, `(2, 3)`. */
function shapeRepr(shape: readonly number[]): string {
  return shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
}

/**
 * The .npy header numpy writes for a C-order array (`_write_array_header` + `_wrap_header`): sorted
 * keys, `, }`, 21 - len(repr(shape[0])) spaces of growth room, then spaces and `\n` up to a
 * multiple of 64 (never zero padding). Version 1.0 unless the header passes 65535 bytes (2.0).
 */
export function formatNpyHeader(dtype: DType, shape: readonly number[], tensor: string, warn: (f: Finding) => void): Uint8Array {
  const descr = dtypeToDescr(dtype, tensor, warn);
  let text = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shapeRepr(shape)}, }`;
  if (shape.length > 0) text += ' '.repeat(Math.max(0, GROWTH_AXIS_MAX_DIGITS - String(shape[0]).length));
  const hlen = text.length + 1;
  for (const [major, lenSize] of [[1, 2], [2, 4]] as const) {
    const pad = ARRAY_ALIGN - ((8 + lenSize + hlen) % ARRAY_ALIGN);
    const total = hlen + pad;
    if (lenSize === 2 && total > 0xffff) continue;
    const out = new Uint8Array(8 + lenSize + total);
    out.set(NPY_MAGIC, 0);
    out[6] = major;
    out[7] = 0;
    out[8] = total & 0xff;
    out[9] = (total >>> 8) & 0xff;
    if (lenSize === 4) {
      out[10] = (total >>> 16) & 0xff;
      out[11] = (total >>> 24) & 0xff;
    }
    for (let i = 0; i < text.length; i++) out[8 + lenSize + i] = text.charCodeAt(i);
    out.fill(0x20, 8 + lenSize + text.length, out.byteLength - 1);
    out[out.byteLength - 1] = 0x0a;
    return out;
  }
  throw new TensorportError('NpyInvalidHeader', `${tensor}: header too long`, { tensor });
}
