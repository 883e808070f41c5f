import type { DType } from '../dtype.ts';
import { bf16ArrayToF32, f16ArrayToF32 } from '../float16.ts';

/** Values of a piece of little-endian bytes as numbers, or null for dtypes compared bitwise only. */
export type Decoded = ArrayLike<number>;

export const DECODABLE: ReadonlySet<DType> = new Set<DType>(['F16', 'BF16', 'F32', 'F64', 'I8', 'U8', 'I16', 'U16', 'I32', 'U32', 'I64', 'U64']);

/** A view when `bytes` is aligned for the element size, else an aligned copy. */
function aligned(bytes: Uint8Array, size: number): ArrayBuffer {
  if (bytes.byteOffset % size === 0 && bytes.buffer instanceof ArrayBuffer) return bytes.buffer;
  return bytes.slice().buffer;
}

function view<T>(bytes: Uint8Array, size: number, make: (buf: ArrayBuffer, off: number, len: number) => T): T {
  const buf = aligned(bytes, size);
  const off = buf === bytes.buffer ? bytes.byteOffset : 0;
  return make(buf, off, bytes.byteLength / size);
}

/** F16/BF16 go through core's exact F16/BF16 → F32 helpers. Assumes a little-endian host (as the writers do). */
export function decode(dtype: DType, bytes: Uint8Array): Decoded | null {
  switch (dtype) {
    case 'F16':
    case 'BF16': {
      const src = view(bytes, 2, (b, o, n) => new Uint16Array(b, o, n));
      const bits = new Uint32Array(src.length);
      (dtype === 'F16' ? f16ArrayToF32 : bf16ArrayToF32)(src, bits);
      return new Float32Array(bits.buffer);
    }
    case 'F32':
      return view(bytes, 4, (b, o, n) => new Float32Array(b, o, n));
    case 'F64':
      return view(bytes, 8, (b, o, n) => new Float64Array(b, o, n));
    case 'I8':
      return new Int8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    case 'U8':
      return bytes;
    case 'I16':
      return view(bytes, 2, (b, o, n) => new Int16Array(b, o, n));
    case 'U16':
      return view(bytes, 2, (b, o, n) => new Uint16Array(b, o, n));
    case 'I32':
      return view(bytes, 4, (b, o, n) => new Int32Array(b, o, n));
    case 'U32':
      return view(bytes, 4, (b, o, n) => new Uint32Array(b, o, n));
    case 'I64':
      return Float64Array.from(view(bytes, 8, (b, o, n) => new BigInt64Array(b, o, n)), Number);
    case 'U64':
      return Float64Array.from(view(bytes, 8, (b, o, n) => new BigUint64Array(b, o, n)), Number);
    default:
      return null;
  }
}

/** Integer values exactly: 64-bit ones as BigInt (decode's F64 loses them past 2^53). */
export function decodeInts(dtype: DType, bytes: Uint8Array): ArrayLike<number | bigint> {
  if (dtype === 'I64') return view(bytes, 8, (b, o, n) => new BigInt64Array(b, o, n));
  if (dtype === 'U64') return view(bytes, 8, (b, o, n) => new BigUint64Array(b, o, n));
  return decode(dtype, bytes)!;
}

/** True when the two pieces hold the same bytes (words at a time when aligned). */
const NodeBuffer = (globalThis as { Buffer?: { from(b: ArrayBufferLike, offset: number, length: number): { equals(other: Uint8Array): boolean } } }).Buffer;

export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  const n = a.byteLength;
  // Node's Buffer compares with memcmp, several times faster than the word loop; browsers lack it.
  if (NodeBuffer) return NodeBuffer.from(a.buffer, a.byteOffset, n).equals(b);
  if (a.byteOffset % 4 === 0 && b.byteOffset % 4 === 0 && n % 4 === 0) {
    const wa = new Int32Array(a.buffer, a.byteOffset, n / 4);
    const wb = new Int32Array(b.buffer, b.byteOffset, n / 4);
    for (let i = 0; i < wa.length; i++) if (wa[i] !== wb[i]) return false;
    return true;
  }
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false;
  return true;
}
