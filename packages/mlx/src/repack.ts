/**
 * Changing the bits and/or group size of affine layers. Lossless when every old group splits into
 * whole new groups and the new width holds every old code (bits up or equal, group size divided):
 * codes are re-packed and each scale/bias repeated. Anything else dequantizes (in the scales'
 * dtype, as `mx.dequantize` does) and re-quantizes with the chosen kernel variant; the largest
 * absolute difference to the original dequantized weights is reported per layer.
 */
import { byteLength, TensorportError, type TensorDescriptor } from '@tensorport/core';
import { checkAffineParams, dequantizeAffine, quantizeAffine, affineScalesBiases, type AffineVariant } from './affine.ts';
import { packCodes, unpackCodes } from './bitstream.ts';
import { bytesOfWords, decodeFloats, encodeFloats, floatBytes, wordsOf, type FloatDType } from './bytes.ts';
import { parseQuantizationConfig, quantizationSection, withQuantization, type QuantParams } from './config.ts';
import { isRecord, outputMetadata, type ConversionResult } from './dequantize.ts';
import { findQuantizedLayers, type QuantizedLayer, type RecognizeOptions } from './layers.ts';
import { computedDescriptor, lockstep, rowsPerBlock } from './rows.ts';

export interface RepackTarget {
  bits?: number;
  groupSize?: number;
  /** Kernel variant for layers that must be re-quantized; default `gpu`. */
  variant?: AffineVariant;
}

export interface RepackLayerReport {
  path: string;
  from: { bits: number; groupSize: number };
  to: { bits: number; groupSize: number };
  lossless: boolean;
  /**
   * Largest |new − original| over the dequantized weights: 0 when lossless; for a re-quantized
   * layer, null until its weight tensor has been streamed (e.g. written) once.
   */
  maxAbsError: number | null;
}

export interface RepackResult extends ConversionResult {
  report: RepackLayerReport[];
}

type Source = { readonly tensors: readonly TensorDescriptor[]; readonly metadata?: ReadonlyMap<string, string> | null };

export function isLosslessRepack(from: { bits: number; groupSize: number }, to: { bits: number; groupSize: number }): boolean {
  return to.bits >= from.bits && from.groupSize % to.groupSize === 0;
}

export function repackCheckpoint(checkpoint: Source, target: RepackTarget, options: RecognizeOptions = {}): RepackResult {
  const layers = findQuantizedLayers(checkpoint, options);
  const byName = new Map(checkpoint.tensors.map((t) => [t.name, t]));
  const parsed = parseQuantizationConfig(options.config);
  const variant = target.variant ?? 'gpu';
  const firstAffine = layers.find((l) => l.mode === 'affine');
  const defaults: QuantParams = {
    mode: 'affine',
    bits: target.bits ?? parsed?.defaults.bits ?? firstAffine?.bits ?? 4,
    groupSize: target.groupSize ?? parsed?.defaults.groupSize ?? firstAffine?.groupSize ?? 64,
  };
  const replaced = new Map<string, TensorDescriptor[]>();
  const outLayers: QuantizedLayer[] = [];
  const report: RepackLayerReport[] = [];
  for (const layer of layers) {
    if (layer.mode !== 'affine') {
      outLayers.push(layer);
      continue;
    }
    const to = { bits: target.bits ?? layer.bits, groupSize: target.groupSize ?? layer.groupSize };
    checkAffineParams(to.bits, to.groupSize, layer.weight);
    if (layer.cols % to.groupSize !== 0) {
      throw new TensorportError('MlxInvalidQuantization', `${layer.weight}: ${layer.cols} columns do not divide into groups of ${to.groupSize}`, { tensor: layer.weight });
    }
    const lossless = isLosslessRepack(layer, to);
    const entry: RepackLayerReport = { path: layer.path, from: { bits: layer.bits, groupSize: layer.groupSize }, to, lossless, maxAbsError: lossless ? 0 : null };
    report.push(entry);
    const next: QuantizedLayer = { ...layer, ...to, source: 'options' };
    outLayers.push(next);
    if (to.bits === layer.bits && to.groupSize === layer.groupSize) continue;
    const src = { w: byName.get(layer.weight)!, s: byName.get(layer.scales)!, b: byName.get(layer.biases!)! };
    replaced.set(layer.weight, lossless ? splitGroups(layer, next, src) : requantize(layer, next, src, variant, entry));
  }
  const consumed = new Set(layers.flatMap((l) => (replaced.has(l.weight) ? [l.scales, l.biases ?? ''] : [])));
  const tensors: TensorDescriptor[] = [];
  for (const t of checkpoint.tensors) {
    if (consumed.has(t.name)) continue;
    tensors.push(...(replaced.get(t.name) ?? [t]));
  }
  const metadata = outputMetadata(checkpoint.metadata);
  metadata.set('quantization_bits', String(defaults.bits));
  metadata.set('quantization_group_size', String(defaults.groupSize));
  const result: RepackResult = { tensors, metadata, layers: outLayers, report };
  if (isRecord(options.config)) {
    const overrides = new Map<string, QuantParams | false>();
    for (const [path, v] of parsed?.modules ?? []) if (v === false) overrides.set(path, false);
    for (const l of outLayers) {
      if (l.mode !== defaults.mode || l.bits !== defaults.bits || l.groupSize !== defaults.groupSize) overrides.set(l.path, { mode: l.mode, bits: l.bits, groupSize: l.groupSize });
    }
    result.config = withQuantization(options.config, quantizationSection(defaults, overrides));
  }
  return result;
}

interface LayerSources {
  w: TensorDescriptor;
  s: TensorDescriptor;
  b: TensorDescriptor;
}

function inputsOf(layer: QuantizedLayer, src: LayerSources) {
  const sRow = (layer.cols / layer.groupSize) * floatBytes(layer.scaleDtype as FloatDType);
  return [
    { desc: src.w, rowBytes: (layer.cols * layer.bits) / 8 },
    { desc: src.s, rowBytes: sRow },
    { desc: src.b, rowBytes: sRow },
  ];
}

function shapes(next: QuantizedLayer) {
  const lead = next.shape.slice(0, -1);
  return { w: [...lead, (next.cols * next.bits) / 32], s: [...lead, next.cols / next.groupSize] };
}

/** Same codes in a width ≥ the old one; each scale and bias repeated old/new group size times. */
function splitGroups(layer: QuantizedLayer, next: QuantizedLayer, src: LayerSources): TensorDescriptor[] {
  const dtype = layer.scaleDtype as FloatDType;
  const block = rowsPerBlock(layer.rows, layer.cols);
  const sh = shapes(next);
  const repeat = layer.groupSize / next.groupSize;
  const size = floatBytes(dtype);
  const weight = computedDescriptor(next.weight, 'U32', sh.w, byteLength('U32', sh.w), () =>
    lockstep(next.weight, [{ desc: src.w, rowBytes: (layer.cols * layer.bits) / 8 }], layer.rows, block, ([wb], _r, n) =>
      bytesOfWords(packCodes(unpackCodes(wordsOf(wb!), layer.bits, n * layer.cols), next.bits)),
    ),
  );
  const side = (name: string, desc: TensorDescriptor) =>
    computedDescriptor(name, dtype, sh.s, byteLength(dtype, sh.s), () =>
      lockstep(name, [{ desc, rowBytes: (layer.cols / layer.groupSize) * size }], layer.rows, block, ([bytes]) => {
        const input = bytes!;
        const out = new Uint8Array(input.byteLength * repeat);
        for (let i = 0, o = 0; i < input.byteLength; i += size) {
          for (let k = 0; k < repeat; k++, o += size) out.set(input.subarray(i, i + size), o);
        }
        return out;
      }),
    );
  return [weight, side(next.scales, src.s), side(next.biases!, src.b)];
}

/** Dequantize to the scales' dtype, quantize again; the weight pass also measures the error. */
function requantize(layer: QuantizedLayer, next: QuantizedLayer, src: LayerSources, variant: AffineVariant, entry: RepackLayerReport): TensorDescriptor[] {
  const dtype = layer.scaleDtype as FloatDType;
  const block = rowsPerBlock(layer.rows, layer.cols);
  const inputs = inputsOf(layer, src);
  const sh = shapes(next);
  const opts = { bits: next.bits, groupSize: next.groupSize, variant, dtype };
  const original = (blocks: Uint8Array[]) =>
    dequantizeAffine(wordsOf(blocks[0]!), decodeFloats(blocks[1]!, dtype), decodeFloats(blocks[2]!, dtype), { bits: layer.bits, groupSize: layer.groupSize, dtype });
  const weight = computedDescriptor(next.weight, 'U32', sh.w, byteLength('U32', sh.w), async function* () {
    let maxErr = 0;
    yield* lockstep(next.weight, inputs, layer.rows, block, (blocks) => {
      const w = original(blocks);
      const q = quantizeAffine(w, layer.cols, opts);
      const back = dequantizeAffine(q.words, q.scales, q.biases, { bits: next.bits, groupSize: next.groupSize, dtype });
      for (let i = 0; i < w.length; i++) {
        const d = Math.abs(back[i]! - w[i]!);
        if (d > maxErr) maxErr = d;
      }
      return bytesOfWords(q.words);
    });
    entry.maxAbsError = maxErr;
  });
  const side = (name: string, pick: 'scales' | 'biases') =>
    computedDescriptor(name, dtype, sh.s, byteLength(dtype, sh.s), () =>
      lockstep(name, inputs, layer.rows, block, (blocks) => encodeFloats(affineScalesBiases(original(blocks), layer.cols, opts)[pick], dtype)),
    );
  return [weight, side(next.scales, 'scales'), side(next.biases!, 'biases')];
}
