import type { DType } from './dtype.ts';
import { TensorportError } from './errors.ts';
import { exactChunks } from './tensor-chunks.ts';
import {
  bf16ArrayToF16,
  bf16ArrayToF32,
  f16ArrayToBf16,
  f16ArrayToF32,
  f32ArrayToBf16,
  f32ArrayToF16,
  f64ArrayToBf16,
  f64ArrayToF16,
  f64ArrayToF32,
} from './float16.ts';
import { DEFAULT_CHUNK } from './io/source.ts';
import type { TensorDescriptor } from './tensor.ts';

export type CastTarget = 'F16' | 'BF16' | 'F32';

/**
 * Which dtypes a cast changes. Only the IEEE-style floats F16, BF16, F32 and F64 are converted.
 * Everything else is left as it is by default, because "cast this model to bf16" means its float
 * weights: integers and BOOL hold indices, masks and packed quantized values; F8/F6/F4 and F8_E8M0
 * are quantized storage that only means something with its scales; C64 has no real narrowing.
 * With `strict`, such a tensor is refused (UnsupportedCast) instead.
 */
export function isCastable(dtype: DType): boolean {
  return dtype in CONVERTERS;
}

export interface CastOptions {
  /** Refuse (UnsupportedCast) tensors whose dtype is not castable, instead of passing them through. */
  strict?: boolean;
}

type Converter = (src: Uint8Array, dst: Uint8Array) => void;

const u16 = (b: Uint8Array): Uint16Array => new Uint16Array(b.buffer, b.byteOffset, b.byteLength >>> 1);
const u32 = (b: Uint8Array): Uint32Array => new Uint32Array(b.buffer, b.byteOffset, b.byteLength >>> 2);

/** CONVERTERS[from][to]; `src` and `dst` are aligned to their element size. */
const CONVERTERS: Partial<Record<DType, Partial<Record<CastTarget, Converter>>>> = {
  F32: { F16: (s, d) => f32ArrayToF16(u32(s), u16(d)), BF16: (s, d) => f32ArrayToBf16(u32(s), u16(d)) },
  F16: { F32: (s, d) => f16ArrayToF32(u16(s), u32(d)), BF16: (s, d) => f16ArrayToBf16(u16(s), u16(d)) },
  BF16: { F32: (s, d) => bf16ArrayToF32(u16(s), u32(d)), F16: (s, d) => bf16ArrayToF16(u16(s), u16(d)) },
  F64: {
    F32: (s, d) => f64ArrayToF32(u32(s), u32(d)),
    F16: (s, d) => f64ArrayToF16(u32(s), u16(d)),
    BF16: (s, d) => f64ArrayToBf16(u32(s), u16(d)),
  },
};

const ELEMENT_BYTES: Partial<Record<DType, number>> = { F16: 2, BF16: 2, F32: 4, F64: 8 };

// Typed-array views use the host's byte order; tensor data is little-endian.
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * A descriptor that streams `desc` converted to `to` (see `isCastable`). The source is re-chunked
 * on element boundaries, so its chunks may split values anywhere. Memory: one input and one output
 * chunk.
 */
export function castDescriptor(desc: TensorDescriptor, to: CastTarget, opts: CastOptions = {}): TensorDescriptor {
  if (to !== 'F16' && to !== 'BF16' && to !== 'F32') {
    throw new TensorportError('UnsupportedCast', `cannot cast to ${String(to)}: targets are F16, BF16 and F32`, { tensor: desc.name });
  }
  if (desc.dtype === to) return desc;
  const convert = CONVERTERS[desc.dtype]?.[to];
  if (!convert) {
    if (!opts.strict) return desc;
    throw new TensorportError('UnsupportedCast', `tensor ${JSON.stringify(desc.name)} is ${desc.dtype}, which is not cast to ${to}`, { tensor: desc.name });
  }
  if (!LITTLE_ENDIAN) throw new TensorportError('UnsupportedCast', 'casting needs a little-endian host', { tensor: desc.name });
  const inBytes = ELEMENT_BYTES[desc.dtype]!;
  if (desc.byteLength % inBytes !== 0) {
    throw new TensorportError('TensorByteLengthMismatch', `tensor ${JSON.stringify(desc.name)} has ${desc.byteLength} bytes, not a whole number of ${desc.dtype} values`, { tensor: desc.name });
  }
  return new CastTensor(desc, to);
}

/**
 * `desc` read as `dtype`: a class, not a closure per tensor (a checkpoint may hold 100,000), and
 * two fields: the rest is the source's or looked up again when the tensor is streamed.
 */
class CastTensor implements TensorDescriptor {
  constructor(
    private readonly desc: TensorDescriptor,
    readonly dtype: CastTarget,
  ) {}

  get name(): string {
    return this.desc.name;
  }

  get shape(): readonly number[] {
    return this.desc.shape;
  }

  get byteLength(): number {
    return (this.desc.byteLength / ELEMENT_BYTES[this.desc.dtype]!) * ELEMENT_BYTES[this.dtype]!;
  }

  chunks(chunkSize = DEFAULT_CHUNK): AsyncIterable<Uint8Array> {
    const d = this.desc;
    return castChunks(d, CONVERTERS[d.dtype]![this.dtype]!, ELEMENT_BYTES[d.dtype]!, ELEMENT_BYTES[this.dtype]!, chunkSize);
  }
}

/** Casts every castable tensor; see `isCastable` for what happens to the others. */
export function castTensors(tensors: readonly TensorDescriptor[], to: CastTarget, opts: CastOptions = {}): TensorDescriptor[] {
  return tensors.map((t) => castDescriptor(t, to, opts));
}

async function* castChunks(desc: TensorDescriptor, convert: Converter, inBytes: number, outBytes: number, chunkSize: number): AsyncGenerator<Uint8Array> {
  const perChunk = Math.max(1, Math.floor(chunkSize / outBytes));
  const inChunk = perChunk * inBytes;
  // Values split across source chunks are completed here; own buffer, so aligned. Made only when
  // needed and sized to the tensor, not the chunk: 100,000 tiny tensors each allocating a chunk
  // spent most of a convert in GC, and one that arrives whole needs none.
  let staging: Uint8Array | null = null;
  let filled = 0;
  let done = 0;
  const run = (src: Uint8Array): Uint8Array => {
    const out = new Uint8Array((src.byteLength / inBytes) * outBytes);
    convert(src, out);
    return out;
  };
  for await (const chunk of exactChunks(desc, inChunk)) {
    let pos = 0;
    // Whole, aligned runs straight from the source chunk, skipping the copy.
    if (filled === 0 && chunk.byteOffset % inBytes === 0) {
      while (chunk.byteLength - pos >= inChunk) {
        yield run(chunk.subarray(pos, pos + inChunk));
        pos += inChunk;
      }
      // the tensor's last values, whole in this chunk (a tiny tensor: all of it)
      if (pos < chunk.byteLength && (chunk.byteLength - pos) % inBytes === 0 && done + chunk.byteLength === desc.byteLength) {
        yield run(chunk.subarray(pos));
        pos = chunk.byteLength;
      }
    }
    done += chunk.byteLength;
    while (pos < chunk.byteLength) {
      staging ??= new Uint8Array(Math.min(inChunk, desc.byteLength));
      const take = Math.min(inChunk - filled, chunk.byteLength - pos);
      staging.set(chunk.subarray(pos, pos + take), filled);
      filled += take;
      pos += take;
      if (filled === inChunk) {
        yield run(staging);
        filled = 0;
      }
    }
  }
  if (filled > 0) yield run(staging!.subarray(0, filled));
}
