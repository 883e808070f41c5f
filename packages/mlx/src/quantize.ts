/**
 * Checkpoint-level affine quantization, choosing layers as mlx-lm does: Linear and Embedding
 * weights (and SwitchLinear expert stacks) whose last dimension divides by the group size;
 * everything else stays float. Without the model's code, a flat checkpoint only tells a Linear /
 * Embedding by its tensor: a float `*.weight` with 2 dimensions, or 3 dimensions under an MoE
 * `switch_mlp` / `experts` path (3-D conv kernels elsewhere are left alone).
 */
import { byteLength, TensorportError, type DType, type TensorDescriptor } from '@tensorport/core';
import { affineScalesBiases, checkAffineParams, quantizeAffine, type AffineVariant } from './affine.ts';
import { bytesOfWords, decodeFloats, encodeFloats, floatBytes, type FloatDType } from './bytes.ts';
import { quantizationSection, withQuantization, type QuantParams } from './config.ts';
import { isRecord, outputMetadata, type ConversionResult } from './dequantize.ts';
import type { QuantizedLayer, TensorInfo } from './layers.ts';
import { computedDescriptor, lockstep, rowsPerBlock } from './rows.ts';

export interface LayerChoice {
  bits: number;
  groupSize: number;
}

/** Return false to keep a tensor float, true for the defaults, or bits / group size of its own. */
export type QuantPredicate = (tensor: TensorInfo, defaults: LayerChoice) => boolean | Partial<LayerChoice>;

export interface QuantizeCheckpointOptions {
  /** Default 4. */
  bits?: number;
  /** Default 64. */
  groupSize?: number;
  /** Which MLX kernel to reproduce; default `gpu` (what `mlx_lm.convert` runs on a Mac). */
  variant?: AffineVariant;
  /** Replaces the default choice of layers. */
  predicate?: QuantPredicate;
  /** The model's config.json; the result's `config` gets the quantization sections. */
  config?: unknown;
}

const FLOATS: ReadonlySet<DType> = new Set(['F16', 'BF16', 'F32']);

/** mlx-lm's choice, read off a flat checkpoint (see the file comment). */
export function isQuantizable(t: TensorInfo, groupSize: number): boolean {
  if (!FLOATS.has(t.dtype) || !t.name.endsWith('.weight')) return false;
  const nd = t.shape.length;
  const last = t.shape[nd - 1] ?? 0;
  if (last === 0 || last % groupSize !== 0 || t.shape.some((d) => d === 0)) return false;
  if (nd === 2) return true;
  return nd === 3 && /(^|\.)(switch_mlp|experts)\./.test(t.name);
}

export function quantizeCheckpoint(checkpoint: { readonly tensors: readonly TensorDescriptor[]; readonly metadata?: ReadonlyMap<string, string> | null }, options: QuantizeCheckpointOptions = {}): ConversionResult {
  const defaults: LayerChoice = { bits: options.bits ?? 4, groupSize: options.groupSize ?? 64 };
  checkAffineParams(defaults.bits, defaults.groupSize);
  const variant = options.variant ?? 'gpu';
  const byName = new Map(checkpoint.tensors.map((t) => [t.name, t]));
  const names = new Set(byName.keys());
  for (const t of checkpoint.tensors) {
    if (t.dtype === 'U32' && t.name.endsWith('.weight') && names.has(`${t.name.slice(0, -7)}.scales`)) {
      throw new TensorportError('MlxInvalidQuantization', `${t.name} is already quantized; repack the checkpoint instead`, { tensor: t.name });
    }
  }
  const tensors: TensorDescriptor[] = [];
  const layers: QuantizedLayer[] = [];
  const overrides = new Map<string, QuantParams>();
  for (const t of checkpoint.tensors) {
    const path = t.name.endsWith('.weight') ? t.name.slice(0, -7) : null;
    // Never produce a name the checkpoint already has.
    const free = path !== null && !names.has(`${path}.scales`) && !names.has(`${path}.biases`);
    const choice = free ? choose(t, defaults, options.predicate) : null;
    if (!choice || path === null) {
      tensors.push(t);
      continue;
    }
    checkAffineParams(choice.bits, choice.groupSize, t.name);
    const layer = quantizedLayer(path, t, choice);
    layers.push(layer);
    if (choice.bits !== defaults.bits || choice.groupSize !== defaults.groupSize) overrides.set(path, { mode: 'affine', ...choice });
    tensors.push(...quantizedTensors(layer, t, variant));
  }
  const metadata = outputMetadata(checkpoint.metadata);
  metadata.set('format', 'mlx');
  metadata.set('quantization_bits', String(defaults.bits));
  metadata.set('quantization_group_size', String(defaults.groupSize));
  const result: ConversionResult = { tensors, metadata, layers };
  if (options.config !== undefined) {
    const base = isRecord(options.config) ? options.config : {};
    result.config = withQuantization(base, quantizationSection({ mode: 'affine', ...defaults }, overrides));
  }
  return result;
}

function choose(t: TensorInfo, defaults: LayerChoice, predicate?: QuantPredicate): LayerChoice | null {
  if (!FLOATS.has(t.dtype) || t.shape.length < 2) return null;
  if (!predicate) return isQuantizable(t, defaults.groupSize) ? defaults : null;
  const verdict = predicate(t, defaults);
  if (verdict === false) return null;
  const choice = verdict === true ? defaults : { ...defaults, ...verdict };
  const last = t.shape[t.shape.length - 1]!;
  if (last % choice.groupSize !== 0) {
    throw new TensorportError('MlxInvalidQuantization', `${t.name}: last dimension ${last} does not divide into groups of ${choice.groupSize}`, { tensor: t.name });
  }
  return choice;
}

export function quantizedLayer(path: string, t: TensorInfo, choice: LayerChoice): QuantizedLayer {
  const cols = t.shape[t.shape.length - 1]!;
  const rows = t.shape.slice(0, -1).reduce((a, b) => a * b, 1);
  return {
    path,
    weight: `${path}.weight`,
    scales: `${path}.scales`,
    biases: `${path}.biases`,
    mode: 'affine',
    bits: choice.bits,
    groupSize: choice.groupSize,
    shape: [...t.shape],
    rows,
    cols,
    scaleDtype: t.dtype,
    source: 'options',
  };
}

/** weight (U32), scales and biases (the input dtype) of one layer, each streamed from `src`. */
function quantizedTensors(layer: QuantizedLayer, src: TensorDescriptor, variant: AffineVariant): TensorDescriptor[] {
  const dtype = src.dtype as FloatDType;
  const { rows, cols, bits, groupSize } = layer;
  const lead = layer.shape.slice(0, -1);
  const block = rowsPerBlock(rows, cols);
  const input = [{ desc: src, rowBytes: cols * floatBytes(dtype) }];
  const opts = { bits, groupSize, variant, dtype };
  const wShape = [...lead, (cols * bits) / 32];
  const sShape = [...lead, cols / groupSize];
  const weight = computedDescriptor(layer.weight, 'U32', wShape, byteLength('U32', wShape), () =>
    lockstep(layer.weight, input, rows, block, ([b]) => bytesOfWords(quantizeAffine(decodeFloats(b!, dtype), cols, opts).words)),
  );
  const side = (name: string, pick: 'scales' | 'biases') =>
    computedDescriptor(name, dtype, sShape, byteLength(dtype, sShape), () =>
      lockstep(name, input, rows, block, ([b]) => encodeFloats(affineScalesBiases(decodeFloats(b!, dtype), cols, opts)[pick], dtype)),
    );
  return [weight, side(layer.scales, 'scales'), side(layer.biases!, 'biases')];
}
