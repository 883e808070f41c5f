import {
  TensorportError, castDescriptor, f32ArrayToBf16, f32ArrayToF16, type CastTarget, type TensorDescriptor,
} from '@tensorport/core';
import { mapUnits } from './blocks-stream.ts';
import { canDequantize, dequantizeBlocks } from './dequant/index.ts';
import { ggmlTypeByName, type GgmlType } from './ggml-types.ts';
import { canQuantize, quantizeBlocks } from './quant/quantize.ts';
import type { GgufWriteTensor } from './write.ts';

/** A tensor in ggml blocks: a GgufTensor, or what quantizeDescriptor / MLX repacking produce. */
export type BlockTensor = TensorDescriptor & { readonly ggmlType: GgmlType; readonly logicalShape: readonly number[] };

const OUT_BYTES: Record<CastTarget, number> = { F32: 4, F16: 2, BF16: 2 };

function narrow(y: Float32Array, to: CastTarget): Uint8Array {
  const bits = new Uint32Array(y.buffer, y.byteOffset, y.length);
  if (to === 'F32') return new Uint8Array(y.buffer, y.byteOffset, y.byteLength);
  const out = new Uint16Array(y.length);
  (to === 'F16' ? f32ArrayToF16 : f32ArrayToBf16)(bits, out);
  return new Uint8Array(out.buffer);
}

/**
 * The tensor as F32, F16 or BF16 in its row-major shape, dequantized block by block while
 * streaming (bit for bit as gguf-py to F32, then core's exact round-to-nearest-even casts).
 * Plain float tensors are cast with core's casts directly.
 */
export function dequantizedDescriptor(t: BlockTensor, to: CastTarget = 'F32'): TensorDescriptor {
  const type = t.ggmlType;
  if (type.dtype) {
    if (type.dtype !== 'F32' && type.dtype !== 'F16' && type.dtype !== 'BF16' && type.dtype !== 'F64') {
      throw new TensorportError('UnsupportedCast', `tensor ${JSON.stringify(t.name)} is ${type.name}, not a float type`, { tensor: t.name });
    }
    const plain: TensorDescriptor = { name: t.name, dtype: type.dtype, shape: t.logicalShape, byteLength: t.byteLength, chunks: (c?: number) => t.chunks(c) };
    return castDescriptor(plain, to, { strict: true });
  }
  if (!canDequantize(type)) {
    throw new TensorportError('GgufUnsupportedType', `tensor ${JSON.stringify(t.name)}: dequantizing ${type.name} is not supported`, { tensor: t.name });
  }
  const elements = t.logicalShape.reduce((a, b) => a * b, 1);
  const outBytes = OUT_BYTES[to];
  const blockOut = type.blockSize * outBytes;
  return {
    name: t.name,
    dtype: to,
    shape: t.logicalShape,
    byteLength: elements * outBytes,
    chunks: (chunkSize?: number) => {
      let y = new Float32Array(0);
      return mapUnits(t, type.typeSize, blockOut, (src, n) => {
        if (y.length !== n * type.blockSize) y = new Float32Array(n * type.blockSize);
        dequantizeBlocks(type, src, y);
        // Copy the F32 view: the buffer is reused for the next chunk.
        return to === 'F32' ? new Uint8Array(y.buffer.slice(0, n * type.blockSize * 4)) : narrow(y, to);
      }, chunkSize);
    },
  };
}

/** A conversion's worst difference, set as the tensor streams: null until it has streamed whole. */
export interface ErrorProbe {
  maxAbs: number | null;
}

/**
 * `desc` (F32, F16, BF16 or F64, row-major) quantized to `type` while streaming, byte for byte as
 * `gguf.quants.quantize` of the values cast to float32. The last axis must be a multiple of the
 * block size (GgufBlockMismatch otherwise, gguf-py's QuantError). With `probe`, each unit's result
 * is read back and compared with its input: `probe.maxAbs` is the largest |written − input| once
 * the stream has ended (the error a warning reports for values not stored in this type before,
 * FP8 weights written to GGUF).
 */
export function quantizeDescriptor(desc: TensorDescriptor, type: GgmlType | string, probe?: ErrorProbe): GgufWriteTensor & BlockTensor {
  const t = typeof type === 'string' ? ggmlTypeByName(type) : type;
  if (!t) throw new TensorportError('GgufUnknownType', `unknown ggml type ${JSON.stringify(type)}`, { tensor: desc.name });
  if (!canQuantize(t)) throw new TensorportError('GgufUnsupportedType', `quantizing to ${t.name} is not supported`, { tensor: desc.name });
  const shape = desc.shape;
  const last = shape.length ? shape[shape.length - 1]! : 1;
  if (last % t.blockSize !== 0) {
    throw new TensorportError('GgufBlockMismatch', `tensor ${JSON.stringify(desc.name)}: last dimension ${last} is not a multiple of the ${t.name} block size ${t.blockSize}`, { tensor: desc.name });
  }
  const f32 = castDescriptor(desc, 'F32', { strict: true });
  const elements = shape.reduce((a, b) => a * b, 1);
  const rowBytes = (last / t.blockSize) * t.typeSize;
  return {
    name: desc.name,
    dtype: t.dtype ?? 'U8',
    shape: t.dtype ? shape : [...shape.slice(0, -1), rowBytes],
    byteLength: (elements / t.blockSize) * t.typeSize,
    ggmlType: t,
    logicalShape: shape,
    chunks: (chunkSize?: number) => (probe ? measured(f32, t, probe, chunkSize) : mapUnits(f32, t.blockSize * 4, t.typeSize, (src, n) => quantizeBlocks(t, unitsOf(src, n, t)), chunkSize)),
  };
}

const unitsOf = (src: Uint8Array, n: number, t: GgmlType): Float32Array => new Float32Array(src.buffer, src.byteOffset, n * t.blockSize);

/** quantizeDescriptor's stream, each unit dequantized back and compared; the worst difference lands in `probe` at the end. */
async function* measured(f32: TensorDescriptor, t: GgmlType, probe: ErrorProbe, chunkSize?: number): AsyncGenerator<Uint8Array> {
  let worst = 0;
  yield* mapUnits(f32, t.blockSize * 4, t.typeSize, (src, n) => {
    const x = unitsOf(src, n, t);
    const bytes = quantizeBlocks(t, x);
    const back = dequantizeBlocks(t, bytes);
    for (let i = 0; i < x.length; i++) {
      const d = Math.abs(back[i]! - x[i]!);
      if (d > worst) worst = d;
    }
    return bytes;
  }, chunkSize);
  probe.maxAbs = worst;
}

