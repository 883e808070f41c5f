/**
 * FP8 block dequantization while streaming: w[i][j] = e4m3(q[i][j]) · s[⌊i/bm⌋][⌊j/bn⌋], the
 * product in float32 (DeepSeek's weight_dequant and transformers' Fp8Dequantize multiply in
 * float32), then rounded to the output dtype (round to nearest even, as torch's .to()). Memory: one
 * band of bm rows of the weight and its output, plus the scale tensor (⌈rows/bm⌉·⌈cols/bn⌉ values).
 */
import { bf16BitsToF32, f16BitsToF32, f32ArrayToBf16, f32ArrayToF16, TensorportError, type CastTarget, type TensorDescriptor } from '@tensorport/core';
import { E4M3FN_VALUES } from './e4m3.ts';
import { fp8Layers, type Fp8BlockScheme } from './scheme.ts';

const OUT_BYTES: Readonly<Record<CastTarget, number>> = { F32: 4, BF16: 2, F16: 2 };

/** The scale tensor as float32 values (it is small: one value per block). */
async function scaleValues(scale: TensorDescriptor): Promise<Float32Array> {
  const bytes = new Uint8Array(scale.byteLength);
  let at = 0;
  for await (const c of scale.chunks()) {
    if (at + c.byteLength > bytes.byteLength) throw new TensorportError('QuantScaleMismatch', `${scale.name} streams more bytes than its ${scale.byteLength}`, { tensor: scale.name });
    bytes.set(c, at);
    at += c.byteLength;
  }
  if (at !== bytes.byteLength) throw new TensorportError('QuantScaleMismatch', `${scale.name} streams ${at} of its ${scale.byteLength} bytes`, { tensor: scale.name });
  const view = new DataView(bytes.buffer);
  const n = bytes.byteLength / (scale.dtype === 'F32' ? 4 : 2);
  const out = new Float32Array(n);
  const bits = new Uint32Array(out.buffer);
  for (let i = 0; i < n; i++) {
    if (scale.dtype === 'F32') out[i] = view.getFloat32(i * 4, true);
    else bits[i] = scale.dtype === 'BF16' ? bf16BitsToF32(view.getUint16(i * 2, true)) : f16BitsToF32(view.getUint16(i * 2, true));
  }
  return out;
}

/** `weight` (F8_E4M3 [rows, cols]) with `scale` ([⌈rows/bm⌉, ⌈cols/bn⌉], checked by fp8Layers) as a `dtype` tensor of the same name and shape. */
export function dequantizeFp8Block(weight: TensorDescriptor, scale: TensorDescriptor, blockSize: readonly [number, number], dtype: CastTarget): TensorDescriptor {
  const [rows, cols] = weight.shape as [number, number];
  const [bm, bn] = blockSize;
  const scaleCols = Math.ceil(cols / bn);
  return {
    name: weight.name,
    dtype,
    shape: [rows, cols],
    byteLength: rows * cols * OUT_BYTES[dtype],
    async *chunks() {
      const s = await scaleValues(scale);
      // One column's scale index, computed once for the whole tensor.
      const colBlock = new Int32Array(cols);
      for (let j = 0; j < cols; j++) colBlock[j] = Math.floor(j / bn);
      const band = new Uint8Array(Math.min(bm, rows) * cols);
      const f32 = new Float32Array(band.length);
      const f32Bits = new Uint32Array(f32.buffer);
      const half = dtype === 'F32' ? null : new Uint16Array(band.length);
      let filled = 0;
      let row = 0;
      const emit = (n: number): Uint8Array => {
        const rowsIn = n / cols;
        const base = Math.floor(row / bm) * scaleCols;
        for (let i = 0, k = 0; i < rowsIn; i++) {
          for (let j = 0; j < cols; j++, k++) f32[k] = E4M3FN_VALUES[band[k]!]! * s[base + colBlock[j]!]!;
        }
        row += rowsIn;
        if (!half) return new Uint8Array(f32.buffer.slice(0, n * 4));
        const out = half.subarray(0, n);
        if (dtype === 'BF16') f32ArrayToBf16(f32Bits.subarray(0, n), out);
        else f32ArrayToF16(f32Bits.subarray(0, n), out);
        return new Uint8Array(out.buffer.slice(0, n * 2));
      };
      for await (const chunk of weight.chunks()) {
        let at = 0;
        while (at < chunk.byteLength) {
          const take = Math.min(band.length - filled, chunk.byteLength - at);
          band.set(chunk.subarray(at, at + take), filled);
          filled += take;
          at += take;
          // A band is bm rows, the last one what is left.
          const bandBytes = Math.min(bm, rows - row) * cols;
          if (filled === bandBytes) {
            yield emit(filled);
            filled = 0;
          }
        }
      }
      if (filled !== 0 || row !== rows) throw new TensorportError('ShortRead', `${weight.name}: ${row * cols + filled} of ${rows * cols} bytes streamed`, { tensor: weight.name });
    },
  };
}

/**
 * A checkpoint's tensors with every FP8 layer (checked by fp8Layers) dequantized to `dtype` and its
 * scale gone; other tensors as they are, in their order. `layers` names the dequantized weights.
 */
export function dequantizeFp8Tensors(tensors: readonly TensorDescriptor[], scheme: Fp8BlockScheme, dtype: CastTarget): { tensors: TensorDescriptor[]; layers: string[] } {
  const layers = fp8Layers(tensors, scheme);
  const byName = new Map(tensors.map((t) => [t.name, t]));
  const dequantized = new Map(layers.map((l) => [l.weight, dequantizeFp8Block(byName.get(l.weight)!, byName.get(l.scale)!, scheme.blockSize, dtype)]));
  const scales = new Set(layers.map((l) => l.scale));
  return { tensors: tensors.filter((t) => !scales.has(t.name)).map((t) => dequantized.get(t.name) ?? t), layers: layers.map((l) => l.weight) };
}
