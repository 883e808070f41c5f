import { byteLength, readChunks, DEFAULT_CHUNK, TensorportError, type ByteSource, type DType } from '@tensorport/core';
import type { TensorRecord } from '../pickle/values.ts';
import { dtypeInfo } from './dtypes.ts';

/** The bytes of one storage, exactly the storage's size. */
export interface StorageBytes {
  /** Random access; for a stored member or a legacy block, a window of the file itself. */
  readonly source: ByteSource;
  /**
   * Sequential access when random reads are costly (a deflated member is inflated from its start
   * on every read): contiguous tensors stream through this, and get no zero-copy `range`.
   */
  readonly stream?: (offset: number, length: number) => AsyncIterable<Uint8Array>;
  /** Stored big-endian (ZIP `byteorder` record `big`): swapped to little-endian on read. */
  readonly bigEndian: boolean;
}

/** 1 GiB: the most a strided view (transposed, expanded, sliced) may materialise into one buffer. */
export const DEFAULT_MAX_VIEW_BYTES = 1 << 30;

/**
 * Where a tensor's elements lie in its storage, checked: `(offset + Σ i_k·stride_k)·elemsize` must
 * stay inside the storage for every index (torch never writes negative strides), with BigInt so no
 * crafted size overflows. Contiguous tensors are one byte range; others are gathered.
 */
export interface TensorLayout {
  readonly dtype: DType;
  /** safetensors shape (a packed float4 tensor counts values, torch counts bytes). */
  readonly shape: readonly number[];
  readonly byteLength: number;
  readonly elemSize: number;
  /** Byte offset of the first element in the storage. */
  readonly start: number;
  /** One past the last byte any element touches. */
  readonly extentEnd: number;
  readonly contiguous: boolean;
  /** Byte swap unit when the storage is big-endian (complex types swap each half); 1 = none. */
  readonly swapUnit: number;
  /** The torch shape and strides a gather walks; null when contiguous (a checkpoint of 100,000 tensors keeps none of them). */
  readonly view: { readonly shape: readonly number[]; readonly stride: readonly number[] } | null;
}

export function planTensor(name: string, t: TensorRecord, storageBytes: number, maxViewBytes = DEFAULT_MAX_VIEW_BYTES): TensorLayout {
  const info = dtypeInfo(t.dtype);
  if (info.safetensors === null) {
    throw new TensorportError('TorchUnsupportedDtype', `${JSON.stringify(name)} is torch.${t.dtype}, which safetensors has no dtype for`, { tensor: name });
  }
  const es = info.bytes;
  let numel = 1n;
  let last = BigInt(t.offset);
  t.shape.forEach((d, k) => {
    numel *= BigInt(d);
    last += BigInt(Math.max(d - 1, 0)) * BigInt(t.stride[k]!);
  });
  const extentEnd = numel === 0n ? 0n : (last + 1n) * BigInt(es);
  if (extentEnd > BigInt(storageBytes)) {
    throw new TensorportError('TorchStorageMismatch', `${JSON.stringify(name)} reaches byte ${extentEnd} of storage ${t.storage.key}, which holds ${storageBytes} bytes`, { tensor: name });
  }
  // the record's own shape unless it must change (it is never written to)
  let shape: readonly number[] = t.shape;
  if (info.packed) {
    if (shape.length === 0) throw new TensorportError('TorchUnsupportedTensor', `${JSON.stringify(name)}: a 0-dim packed float4 tensor has no safetensors shape`, { tensor: name });
    shape = [...shape.slice(0, -1), shape[shape.length - 1]! * 2];
  }
  const bytes = byteLength(info.safetensors, shape, name);
  const contiguous = numel === 0n || isContiguous(t.shape, t.stride);
  // A gather holds the span it reads from and the tensor it builds: both are bounded.
  const span = Number(extentEnd) - t.offset * es;
  if (!contiguous && Math.max(bytes, span) > maxViewBytes) {
    throw new TensorportError('TorchUnsupportedTensor', `${JSON.stringify(name)} is a strided view of ${bytes} bytes spanning ${span} bytes of its storage; materialising it exceeds maxViewBytes (${maxViewBytes})`, { tensor: name });
  }
  return {
    dtype: info.safetensors, shape, byteLength: bytes, elemSize: es, start: numel === 0n ? 0 : t.offset * es, extentEnd: Number(extentEnd),
    contiguous, swapUnit: info.complex ? es / 2 : es, view: contiguous ? null : { shape: t.shape, stride: t.stride },
  };
}

/** C order: stride_k = Π_{j>k} size_j, ignoring dimensions of size 1. */
function isContiguous(shape: readonly number[], stride: readonly number[]): boolean {
  let expected = 1;
  for (let k = shape.length - 1; k >= 0; k--) {
    if (shape[k] !== 1 && stride[k] !== expected) return false;
    expected *= shape[k]!;
  }
  return true;
}

/** The tensor's bytes as safetensors wants them: dense, C order, little-endian. */
export async function* tensorChunks(l: TensorLayout, s: StorageBytes, chunkSize = DEFAULT_CHUNK): AsyncGenerator<Uint8Array> {
  const swap = s.bigEndian && l.swapUnit > 1;
  if (l.contiguous) {
    const step = swap ? Math.max(l.swapUnit, chunkSize - (chunkSize % l.swapUnit)) : chunkSize;
    const chunks = s.stream ? rechunk(s.stream(l.start, l.byteLength), step) : readChunks(s.source, l.start, l.byteLength, step);
    for await (const c of chunks) yield swap ? byteswap(new Uint8Array(c), l.swapUnit) : c; // a copy: never swap the caller's bytes
    return;
  }
  const out = gather(l, await s.source.read(l.start, l.extentEnd - l.start));
  if (swap) byteswap(out, l.swapUnit);
  for (let p = 0; p < out.byteLength; p += chunkSize) yield out.subarray(p, Math.min(out.byteLength, p + chunkSize));
}

/** Copies a strided view (offsets relative to its first element) into C order, a row at a time. */
function gather(l: TensorLayout, src: Uint8Array): Uint8Array {
  const { shape, stride } = l.view!;
  const es = l.elemSize;
  const out = new Uint8Array(l.byteLength);
  const n = shape.length;
  const inner = n === 0 ? 1 : shape[n - 1]!;
  const innerStride = n === 0 ? 0 : stride[n - 1]!;
  const idx = new Array<number>(Math.max(n - 1, 0)).fill(0);
  let o = 0;
  for (;;) {
    let base = 0;
    for (let k = 0; k < n - 1; k++) base += idx[k]! * stride[k]!;
    if (innerStride === 1) {
      out.set(src.subarray(base * es, (base + inner) * es), o);
      o += inner * es;
    } else {
      for (let i = 0; i < inner; i++, o += es) out.set(src.subarray((base + i * innerStride) * es, (base + i * innerStride + 1) * es), o);
    }
    let k = n - 2;
    while (k >= 0 && ++idx[k]! === shape[k]!) idx[k--] = 0;
    if (k < 0) return out;
  }
}

/** Reverses each `unit`-byte group in place. */
export function byteswap(b: Uint8Array, unit: number): Uint8Array {
  for (let p = 0; p + unit <= b.byteLength; p += unit) {
    for (let i = 0, j = p + unit - 1; i < unit / 2; i++, j--) {
      const t = b[p + i]!;
      b[p + i] = b[j]!;
      b[j] = t;
    }
  }
  return b;
}

/** Re-cuts a stream into pieces of exactly `size` bytes (the last may be shorter): whole elements. */
async function* rechunk(input: AsyncIterable<Uint8Array>, size: number): AsyncGenerator<Uint8Array> {
  let buf = new Uint8Array(size);
  let fill = 0;
  for await (let c of input) {
    while (c.byteLength > 0) {
      const n = Math.min(size - fill, c.byteLength);
      buf.set(c.subarray(0, n), fill);
      fill += n;
      c = c.subarray(n);
      if (fill === size) {
        yield buf;
        buf = new Uint8Array(size);
        fill = 0;
      }
    }
  }
  if (fill > 0) yield buf.subarray(0, fill);
}
