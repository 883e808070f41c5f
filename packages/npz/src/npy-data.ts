import { DEFAULT_CHUNK, TensorportError, dtypeBytes, type DType } from '@tensorport/core';

/**
 * Yields exactly `length` bytes after skipping `skip`, then keeps draining `input` without
 * yielding, so a verifying stream underneath still reaches its size and CRC checks.
 */
export async function* window(input: AsyncIterable<Uint8Array>, skip: number, length: number, tensor: string): AsyncGenerator<Uint8Array> {
  let pos = 0;
  const end = skip + length;
  for await (const chunk of input) {
    const a = Math.max(skip - pos, 0);
    const b = Math.min(end - pos, chunk.byteLength);
    if (a < b) yield chunk.subarray(a, b);
    pos += chunk.byteLength;
  }
  if (pos < end) {
    throw new TensorportError('NpyTruncated', `${tensor}: array data ends after ${Math.max(pos - skip, 0)} of ${length} bytes`, { tensor, offset: pos });
  }
}

/** Splits chunks larger than `size` (views, no copies). */
export async function* rechunk(input: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, size = DEFAULT_CHUNK): AsyncGenerator<Uint8Array> {
  for await (const chunk of input) {
    for (let i = 0; i < chunk.byteLength; i += size) yield chunk.subarray(i, Math.min(i + size, chunk.byteLength));
  }
}

/**
 * Big-endian to little-endian while streaming: reverses each `unit`-byte group into a fresh buffer
 * (inputs may be views of a caller's bytes), carrying a partial group across chunk boundaries.
 */
export async function* byteswap(input: AsyncIterable<Uint8Array>, unit: number): AsyncGenerator<Uint8Array> {
  let carry = new Uint8Array(0);
  for await (const chunk of input) {
    const all = carry.byteLength ? concat(carry, chunk) : chunk;
    const whole = all.byteLength - (all.byteLength % unit);
    if (whole > 0) yield swapped(all.subarray(0, whole), unit);
    carry = all.slice(whole);
  }
  if (carry.byteLength) throw new Error(`byteswap: ${carry.byteLength} bytes left over`);
}

export function swapped(b: Uint8Array, unit: number): Uint8Array {
  const out = new Uint8Array(b.byteLength);
  for (let i = 0; i < b.byteLength; i += unit) for (let k = 0; k < unit; k++) out[i + k] = b[i + unit - 1 - k]!;
  return out;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.byteLength + b.byteLength);
  out.set(a, 0);
  out.set(b, a.byteLength);
  return out;
}

/** Collects a whole tensor (Fortran order needs it all before the first C-order byte). */
export async function collect(input: AsyncIterable<Uint8Array>, length: number): Promise<Uint8Array> {
  const out = new Uint8Array(length);
  let n = 0;
  for await (const chunk of input) {
    out.set(chunk, n);
    n += chunk.byteLength;
  }
  return out;
}

/**
 * Fortran (column-major) to C (row-major) order: the element at index (i0..in-1) sits at
 * Σ ik·Fk with F0 = 1, Fk = Fk-1·sk-1. Walks the output in order with an odometer.
 */
export function fortranToC(data: Uint8Array, shape: readonly number[], dtype: DType): Uint8Array {
  const k = dtypeBytes(dtype)!;
  const n = shape.length;
  const count = data.byteLength / k;
  if (n < 2 || count === 0) return data;
  const fstride: number[] = [];
  let s = 1;
  for (let d = 0; d < n; d++) {
    fstride.push(s);
    s *= shape[d]!;
  }
  const words = k % 4 === 0 ? k / 4 : 0;
  const view = (b: Uint8Array) => (k === 2 ? new Uint16Array(b.buffer, b.byteOffset, b.byteLength / 2) : words ? new Uint32Array(b.buffer, b.byteOffset, b.byteLength / 4) : b);
  const src = data.byteOffset % 4 === 0 ? data : data.slice();
  const out = new Uint8Array(data.byteLength);
  const a = view(src);
  const o = view(out);
  const per = words || 1;
  const last = n - 1;
  const inner = shape[last]!;
  const step = fstride[last]! * per;
  const idx = new Array<number>(n).fill(0);
  let base = 0;
  let w = 0;
  for (let done = 0; done < count; done += inner) {
    let r = base * per;
    for (let j = 0; j < inner; j++, r += step) for (let q = 0; q < per; q++) o[w++] = a[r + q]!;
    // advance the odometer over all but the last axis
    for (let d = last - 1; d >= 0; d--) {
      idx[d]!++;
      base += fstride[d]!;
      if (idx[d]! < shape[d]!) break;
      base -= fstride[d]! * shape[d]!;
      idx[d] = 0;
    }
  }
  return out;
}
