/**
 * Checkpoint-level quantization, choosing layers as mlx-lm's `quantize_model` does: Linear and
 * Embedding weights (and SwitchLinear expert stacks) whose last dimension divides by the run's
 * group size; everything else stays float. Without the model's code, a flat checkpoint only tells a
 * Linear / Embedding by its tensor: a float `*.weight` with 2 dimensions, or 3 dimensions under an
 * MoE `switch_mlp` / `experts` path (3-D conv kernels elsewhere are left alone).
 *
 * Only those reach a predicate, which may keep a layer float (`false`), give it the run's settings (`true`), or give it a
 * dict of `to_quantized` arguments: as in MLX, a key the dict leaves out takes `to_quantized`'s own
 * default (mode affine, then that mode's bits / group size), not the run's. Every dict is written
 * verbatim into config.json as the module's entry, as mlx-lm does.
 */
import { byteLength, TensorportError, type DType, type TensorDescriptor } from '@tensorport/core';
import { affineScalesBiases, checkAffineParams, quantizeAffine, type AffineVariant } from './affine.ts';
import { bytesOfWords, decodeFloats, encodeFloats, floatBytes, type FloatDType } from './bytes.ts';
import { modeDefaults, quantizationSection, withQuantization, type QuantMode, type QuantParams } from './config.ts';
import { isRecord, outputMetadata, type ConversionResult } from './dequantize.ts';
import { FP_MODES, type FpMode } from './fp.ts';
import { quantizeFp } from './fp-quantize.ts';
import type { QuantizedLayer, TensorInfo } from './layers.ts';
import { mixedRecipePredicate, modelPredicate, recipeLayout, withOverrides, type LayerOverride, type MixedRecipe } from './recipes.ts';
import { blockScratch, computedDescriptor, lockstep, rowsPerBlock } from './rows.ts';
import type { QuantPredicate, QuantSpec } from './quant-spec.ts';

export interface LayerChoice {
  bits: number;
  groupSize: number;
  mode?: QuantMode;
}

export type { QuantPredicate, QuantSpec } from './quant-spec.ts';

export interface QuantizeCheckpointOptions {
  /** Default: the mode's (affine 4, mxfp4 4, mxfp8 8, nvfp4 4). */
  bits?: number;
  /** Default: the mode's (affine 64, mxfp4 32, mxfp8 32, nvfp4 16). */
  groupSize?: number;
  /** Default affine. */
  mode?: QuantMode;
  /** Which MLX kernel to reproduce; default `gpu` (what `mlx_lm.convert` runs on a Mac). */
  variant?: AffineVariant;
  /** nvfp4: an f32 global scale (mlx-lm never uses one, and nothing records it). */
  globalScale?: number;
  /** Replaces the default choice of layers (see the file comment); wins over `recipe`. */
  predicate?: QuantPredicate;
  /** One of mlx-lm's mixed recipes (affine only); without it the architecture's rule applies, if mlx-lm has one. */
  recipe?: MixedRecipe;
  /** Per-layer rules over the recipe / architecture rule; the first matching one decides. */
  overrides?: readonly LayerOverride[];
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

/** MLX's own checks for a mode's bits and group size (`affine_quantize`, `fp_quantize`). */
export function checkQuantParams(p: QuantParams, tensor?: string): void {
  if (p.mode === 'affine') return checkAffineParams(p.bits, p.groupSize, tensor);
  const fixed = FP_MODES[p.mode as FpMode];
  if (!fixed) throw new TensorportError('MlxUnsupportedQuantization', `unknown quantization mode ${String(p.mode)}`);
  if (p.bits !== fixed.bits || p.groupSize !== fixed.groupSize) {
    throw new TensorportError('MlxUnsupportedQuantization', `${p.mode} quantization needs ${fixed.bits} bits and group size ${fixed.groupSize}, not ${p.bits} bits/group ${p.groupSize}`, tensor === undefined ? {} : { tensor });
  }
}

/** A spec resolved the way `to_quantized(**spec)` resolves it. */
export function resolveSpec(spec: QuantSpec): QuantParams {
  const mode = spec.mode ?? 'affine';
  const d = modeDefaults(mode);
  return { mode, bits: spec.bits ?? d.bits, groupSize: spec.groupSize ?? d.groupSize };
}

/** The config.json entry mlx-lm writes for a spec: its keys, in `group_size, bits, mode` order. */
export function specEntry(spec: QuantSpec): Record<string, unknown> {
  const e: Record<string, unknown> = {};
  if (spec.groupSize !== undefined) e.group_size = spec.groupSize;
  if (spec.bits !== undefined) e.bits = spec.bits;
  if (spec.mode !== undefined) e.mode = spec.mode;
  return e;
}

export function quantizeCheckpoint(checkpoint: { readonly tensors: readonly TensorDescriptor[]; readonly metadata?: ReadonlyMap<string, string> | null }, options: QuantizeCheckpointOptions = {}): ConversionResult {
  const mode = options.mode ?? 'affine';
  const md = modeDefaults(mode);
  const defaults: QuantParams = { mode, bits: options.bits ?? md.bits, groupSize: options.groupSize ?? md.groupSize };
  checkQuantParams(defaults);
  if (options.globalScale !== undefined && mode !== 'nvfp4') {
    throw new TensorportError('MlxInvalidQuantization', `a global scale applies to nvfp4 only, not ${mode}`);
  }
  const variant = options.variant ?? 'gpu';
  const predicate = choosePredicate(checkpoint.tensors, options, mode);
  const byName = new Map(checkpoint.tensors.map((t) => [t.name, t]));
  const names = new Set(byName.keys());
  for (const t of checkpoint.tensors) {
    if (t.dtype === 'U32' && t.name.endsWith('.weight') && names.has(`${t.name.slice(0, -7)}.scales`)) {
      throw new TensorportError('MlxInvalidQuantization', `${t.name} is already quantized; repack the checkpoint instead`, { tensor: t.name });
    }
  }
  const tensors: TensorDescriptor[] = [];
  const layers: QuantizedLayer[] = [];
  const entries = new Map<string, Record<string, unknown>>();
  for (const t of checkpoint.tensors) {
    const path = t.name.endsWith('.weight') ? t.name.slice(0, -7) : null;
    // Never produce a name the checkpoint already has.
    const free = path !== null && !names.has(`${path}.scales`) && !names.has(`${path}.biases`);
    const verdict = free ? choose(t, path, defaults, predicate) : false;
    if (verdict === false || path === null) {
      tensors.push(t);
      continue;
    }
    const choice = verdict === true ? defaults : resolveSpec(verdict);
    if (verdict !== true) entries.set(path, specEntry(verdict));
    checkQuantParams(choice, t.name);
    const last = t.shape[t.shape.length - 1]!;
    if (last % choice.groupSize !== 0) {
      throw new TensorportError('MlxInvalidQuantization', `${t.name}: last dimension ${last} does not divide into groups of ${choice.groupSize}`, { tensor: t.name });
    }
    const layer = quantizedLayer(path, t, choice);
    layers.push(layer);
    tensors.push(...quantizedTensors(layer, t, variant, options.globalScale));
  }
  const metadata = outputMetadata(checkpoint.metadata);
  metadata.set('format', 'mlx');
  metadata.set('quantization_bits', String(defaults.bits));
  metadata.set('quantization_group_size', String(defaults.groupSize));
  if (mode === 'affine') metadata.delete('quantization_mode');
  else metadata.set('quantization_mode', mode);
  const result: ConversionResult = { tensors, metadata, layers };
  if (options.config !== undefined) {
    const base = isRecord(options.config) ? options.config : {};
    const section = quantizationSection(defaults, new Map());
    for (const [p, e] of entries) section[p] = e;
    result.config = withQuantization(base, section);
  }
  return result;
}

/** convert.py: a recipe replaces the model's rule; quantize_model: else the model's `quant_predicate`. */
function choosePredicate(tensors: readonly TensorInfo[], options: QuantizeCheckpointOptions, mode: QuantMode): QuantPredicate | undefined {
  let base = options.predicate;
  if (!base && options.recipe !== undefined) {
    if (mode !== 'affine') throw new TensorportError('MlxUnsupportedQuantization', `the mixed recipes are affine only (mlx-lm refuses them with ${mode})`);
    base = mixedRecipePredicate(options.recipe, recipeLayout(tensors, options.config), options.groupSize ?? null);
  }
  base ??= modelPredicate(options.config) ?? undefined;
  return withOverrides(base, options.overrides ?? []);
}

/** mlx-lm's `wrapped_predicate`: only quantizable modules whose width divides by the run's group size reach the predicate. */
function choose(t: TensorInfo, path: string, defaults: QuantParams, predicate?: QuantPredicate): boolean | QuantSpec {
  if (!isQuantizable(t, defaults.groupSize)) return false;
  if (!predicate) return true;
  return predicate({ name: t.name, dtype: t.dtype, shape: t.shape, path }, defaults);
}

export function quantizedLayer(path: string, t: TensorInfo, choice: QuantParams | LayerChoice): QuantizedLayer {
  const cols = t.shape[t.shape.length - 1]!;
  const rows = t.shape.slice(0, -1).reduce((a, b) => a * b, 1);
  const mode = choice.mode ?? 'affine';
  return {
    path,
    weight: `${path}.weight`,
    scales: `${path}.scales`,
    biases: mode === 'affine' ? `${path}.biases` : null,
    mode,
    bits: choice.bits,
    groupSize: choice.groupSize,
    shape: [...t.shape],
    rows,
    cols,
    scaleDtype: mode === 'affine' ? t.dtype : 'U8',
    source: 'options',
  };
}

/** weight (U32), scales (and for affine, biases) of one layer, each streamed from `src`. */
function quantizedTensors(layer: QuantizedLayer, src: TensorDescriptor, variant: AffineVariant, globalScale?: number): TensorDescriptor[] {
  const dtype = src.dtype as FloatDType;
  const { rows, cols, bits, groupSize } = layer;
  const lead = layer.shape.slice(0, -1);
  const block = rowsPerBlock(rows, cols);
  const input = [{ desc: src, rowBytes: cols * floatBytes(dtype) }];
  const wShape = [...lead, (cols * bits) / 32];
  const sShape = [...lead, cols / groupSize];
  if (layer.mode !== 'affine') {
    const opts = { mode: layer.mode as FpMode, variant, dtype, ...(globalScale === undefined ? {} : { globalScale }) };
    const run = (b: Uint8Array) => quantizeFp(decodeFloats(b, dtype), cols, opts);
    return [
      computedDescriptor(layer.weight, 'U32', wShape, byteLength('U32', wShape), () => lockstep(layer.weight, input, rows, block, ([b]) => bytesOfWords(run(b!).words))),
      computedDescriptor(layer.scales, 'U8', sShape, byteLength('U8', sShape), () => lockstep(layer.scales, input, rows, block, ([b]) => run(b!).scales)),
    ];
  }
  const opts = { bits, groupSize, variant, dtype };
  const eb = floatBytes(dtype);
  const weight = computedDescriptor(layer.weight, 'U32', wShape, byteLength('U32', wShape), () => {
    const scratch = blockScratch();
    return lockstep(layer.weight, input, rows, block, ([b]) => bytesOfWords(quantizeAffine(decodeFloats(b!, dtype, scratch(b!.byteLength / eb)), cols, opts).words));
  });
  const side = (name: string, pick: 'scales' | 'biases') =>
    computedDescriptor(name, dtype, sShape, byteLength(dtype, sShape), () => {
      const scratch = blockScratch();
      return lockstep(name, input, rows, block, ([b]) => encodeFloats(affineScalesBiases(decodeFloats(b!, dtype, scratch(b!.byteLength / eb)), cols, opts)[pick], dtype));
    });
  return [weight, side(layer.scales, 'scales'), side(layer.biases!, 'biases')];
}
