/**
 * Checkpoint-level dequantization: every quantized layer's `weight` becomes a float tensor of its
 * logical shape, its `scales` / `biases` disappear, everything else (the layer's own `bias`
 * included) passes through untouched. Each output is computed a block of rows at a time.
 */
import { byteLength, type Checkpoint, type TensorDescriptor } from '@tensorport/core';
import { dequantizeAffine, type AffineVariant } from './affine.ts';
import { decodeFloats, encodeFloats, floatBytes, wordsOf, type FloatDType } from './bytes.ts';
import { withQuantization } from './config.ts';
import { dequantizeFp, fpDequantizedDtype, type FpDequantizeOptions, type FpMode } from './fp.ts';
import { findQuantizedLayers, type QuantizedLayer, type RecognizeOptions } from './layers.ts';
import { blockScratch, computedDescriptor, lockstep, rowsPerBlock } from './rows.ts';

export interface DequantizeCheckpointOptions extends RecognizeOptions {
  /** Output dtype; default: the scales' dtype for affine layers (as MLX), BF16 for fp modes. */
  dtype?: FloatDType;
  /** nvfp4 global scale, when the producer used one. */
  globalScale?: number;
  /** Which MLX path's arithmetic to reproduce for the fp modes; default `gpu` (see fp.ts). */
  variant?: AffineVariant;
}

export interface ConversionResult {
  tensors: TensorDescriptor[];
  /** `__metadata__` for the output (a Map, like a Checkpoint's, so results chain). */
  metadata: Map<string, string>;
  /** The layers found (dequantize) or produced (quantize, repack). */
  layers: QuantizedLayer[];
  /** config.json with its quantization sections updated, when a config was given. */
  config?: Record<string, unknown>;
}

type Source = Pick<Checkpoint, 'tensors' | 'metadata'>;

export function dequantizeCheckpoint(checkpoint: Source, options: DequantizeCheckpointOptions = {}): ConversionResult {
  const layers = findQuantizedLayers(checkpoint, options);
  const byName = new Map(checkpoint.tensors.map((t) => [t.name, t]));
  const byWeight = new Map(layers.map((l) => [l.weight, l]));
  const consumed = new Set(layers.flatMap((l) => (l.biases ? [l.scales, l.biases] : [l.scales])));
  const tensors: TensorDescriptor[] = [];
  for (const t of checkpoint.tensors) {
    if (consumed.has(t.name)) continue;
    const layer = byWeight.get(t.name);
    tensors.push(layer ? dequantizedWeight(layer, byName, options) : t);
  }
  const metadata = outputMetadata(checkpoint.metadata);
  for (const k of ['quantization_bits', 'quantization_group_size', 'quantization_mode']) metadata.delete(k);
  const result: ConversionResult = { tensors, metadata, layers };
  if (isRecord(options.config)) result.config = withQuantization(options.config, null);
  return result;
}

export function outputMetadata(metadata: ReadonlyMap<string, string> | null | undefined): Map<string, string> {
  return new Map([['format', 'mlx'], ...(metadata ?? [])]);
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The float descriptor for one layer's weight. */
export function dequantizedWeight(
  layer: QuantizedLayer,
  byName: ReadonlyMap<string, TensorDescriptor>,
  options: { dtype?: FloatDType; globalScale?: number; variant?: AffineVariant },
): TensorDescriptor {
  const affine = layer.mode === 'affine';
  const fpOptions: FpDequantizeOptions | null = affine
    ? null
    : {
        mode: layer.mode as FpMode,
        ...(options.dtype ? { dtype: options.dtype } : {}),
        ...(options.globalScale === undefined ? {} : { globalScale: options.globalScale }),
        ...(options.variant ? { variant: options.variant } : {}),
      };
  // What MLX returns, which for nvfp4 with a global scale on the CPU is F32 whatever was asked.
  const dtype: FloatDType = fpOptions ? fpDequantizedDtype(fpOptions) : (options.dtype ?? (layer.scaleDtype as FloatDType));
  const w = byName.get(layer.weight)!;
  const s = byName.get(layer.scales)!;
  const b = layer.biases ? byName.get(layer.biases)! : null;
  const groups = layer.cols / layer.groupSize;
  const sBytes = affine ? floatBytes(layer.scaleDtype as FloatDType) : 1;
  const inputs = [
    { desc: w, rowBytes: (layer.cols * layer.bits) / 8 },
    { desc: s, rowBytes: groups * sBytes },
    ...(b ? [{ desc: b, rowBytes: groups * sBytes }] : []),
  ];
  const block = rowsPerBlock(layer.rows, layer.cols);
  const length = byteLength(dtype, layer.shape, layer.weight);
  return computedDescriptor(layer.weight, dtype, layer.shape, length, () => {
    const scratch = blockScratch();
    return lockstep(layer.weight, inputs, layer.rows, block, ([wb, sb, bb]) => {
      const words = wordsOf(wb!);
      let values: Float32Array;
      if (fpOptions) {
        values = dequantizeFp(words, sb!, fpOptions);
      } else {
        const sdt = layer.scaleDtype as FloatDType;
        const opts = { bits: layer.bits, groupSize: layer.groupSize, dtype: sdt, outDtype: dtype };
        values = dequantizeAffine(words, decodeFloats(sb!, sdt), decodeFloats(bb!, sdt), opts, scratch((sb!.byteLength / floatBytes(sdt)) * layer.groupSize));
      }
      return encodeFloats(values, dtype);
    });
  });
}
