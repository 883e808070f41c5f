/**
 * The MLX commands (`quantize`, `dequantize`, `repack`) as pipeline steps: a transform for
 * `convert` plus what the command reports (the layers, a repack's per-layer error). The settings
 * are checked here, before any input is opened, so the command line, the page and a library
 * caller refuse the same values with the same InvalidOption.
 */
import { TensorportError, type Finding } from '@tensorport/core';
import {
  AFFINE_BITS, AFFINE_GROUP_SIZES, isQuantMode, layerInfo, MIXED_RECIPES, parseLayerOverride,
  type AffineVariant, type ConversionResult, type FloatDType, type MixedRecipe, type MlxLayerInfo, type QuantMode, type RepackResult,
} from '@tensorport/mlx';
import type { ConvertReport } from './pipeline/convert.ts';
import type { Transform } from './pipeline/transform.ts';
import { mlxDequantize, mlxQuantize, mlxRepack, type MlxTransformHooks } from './transforms.ts';

export interface QuantizeSettings {
  /** Default: the mode's (affine 4, mxfp8 8). */
  bits?: number;
  /** Default: the mode's (affine 64, mxfp4/mxfp8 32, nvfp4 16). */
  groupSize?: number;
  /** affine (default), mxfp4, mxfp8 or nvfp4. */
  mode?: string;
  /** One of mlx-lm's mixed recipes: mixed_2_6, mixed_3_4, mixed_3_6, mixed_4_6 (affine only). */
  recipe?: string;
  /** Per-layer rules `regex=bits`, `regex=bits/group_size` or `regex=float`; the first match decides. */
  bitsFor?: readonly string[];
  /** Which MLX kernel's rounding to reproduce: `gpu` (Metal, mlx_lm.convert on a Mac; default) or `cpu`. */
  rounding?: AffineVariant;
}

export interface DequantizeSettings {
  /** Output dtype (default: the scales' dtype; BF16 for the fp modes). */
  dtype?: FloatDType;
  /** Whose fp-mode arithmetic to reproduce: `gpu` (Metal; default) or `cpu` (docs/formats/mlx.md). */
  rounding?: AffineVariant;
  /** nvfp4: the global scale used at quantization time. */
  globalScale?: number;
  /** For files whose shapes fit several settings and that carry no config.json or metadata. */
  bits?: number;
  groupSize?: number;
  mode?: string;
}

export interface RepackSettings {
  bits: number;
  groupSize: number;
  rounding?: AffineVariant;
}

export interface RepackReportEntry {
  layer: string;
  from: { bits: number; groupSize: number };
  to: { bits: number; groupSize: number };
  lossless: boolean;
  /** Largest |new − original| over the dequantized weights (0 when lossless). */
  maxAbsError: number;
}

/** A convert report with what the MLX step did. */
export interface MlxReport extends ConvertReport {
  /** The quantized layers of the output (quantize, repack) or of the input (dequantize). */
  quantization: MlxLayerInfo[];
  /** repack: one entry per affine layer. */
  report: RepackReportEntry[];
}

/** A transform for `convert` and, once it ran, the report of the command it stands for. */
export interface MlxStep {
  readonly transform: Transform;
  /** The convert report with the step's layers and warnings; InternalError if the transform never ran. */
  report(converted: ConvertReport): MlxReport;
}

function checkAffine(bits: number | undefined, groupSize: number | undefined): void {
  if (bits !== undefined && !AFFINE_BITS.includes(bits)) throw new TensorportError('InvalidOption', `bits must be one of ${AFFINE_BITS.join(', ')}, got ${bits}`);
  if (groupSize !== undefined && !AFFINE_GROUP_SIZES.includes(groupSize)) {
    throw new TensorportError('InvalidOption', `the group size must be one of ${AFFINE_GROUP_SIZES.join(', ')}, got ${groupSize}`);
  }
}

function checkMode(mode: string | undefined): QuantMode | undefined {
  if (mode !== undefined && !isQuantMode(mode)) throw new TensorportError('InvalidOption', `the mode must be affine, mxfp4, mxfp8 or nvfp4, got ${mode}`);
  return mode;
}

function step(build: (hooks: MlxTransformHooks) => Transform, finish: (r: MlxReport, c: ConversionResult) => void): MlxStep {
  let conversion: ConversionResult | null = null;
  const transform = build({ onResult: (c) => (conversion = c) });
  return {
    transform,
    report(converted) {
      const c = conversion as ConversionResult | null;
      if (c === null) throw new TensorportError('InternalError', 'the MLX transform did not run');
      // MLX stores every BF16 array as '<V2': expected here, not worth a warning each.
      const warnings: Finding[] = converted.warnings.filter((w) => w.code !== 'NpyV2AsBF16');
      const r: MlxReport = { ...converted, warnings, quantization: layerInfo(c.layers), report: [] };
      finish(r, c);
      return r;
    },
  };
}

/** Quantizes every Linear/Embedding-like float weight as mlx-lm does (docs/formats/mlx.md). */
export function quantizeStep(s: QuantizeSettings = {}): MlxStep {
  const mode = checkMode(s.mode ?? 'affine')!;
  if (mode === 'affine') checkAffine(s.bits, s.groupSize);
  if (s.recipe !== undefined && !(MIXED_RECIPES as readonly string[]).includes(s.recipe)) {
    throw new TensorportError('InvalidOption', `the recipe must be one of ${MIXED_RECIPES.join(', ')}, got ${s.recipe}`);
  }
  const overrides = (s.bitsFor ?? []).map(parseLayerOverride);
  return step(
    (hooks) =>
      mlxQuantize(
        {
          mode,
          ...(s.recipe === undefined ? {} : { recipe: s.recipe as MixedRecipe }),
          ...(overrides.length === 0 ? {} : { overrides }),
          ...(s.bits === undefined ? {} : { bits: s.bits }),
          ...(s.groupSize === undefined ? {} : { groupSize: s.groupSize }),
          ...(s.rounding === undefined ? {} : { variant: s.rounding }),
        },
        hooks,
      ),
    (r) => {
      if (r.quantization.length === 0) r.warnings.push({ code: 'NothingQuantized', message: 'no tensor could be quantized (float *.weight with a last dimension divisible by the group size)' });
    },
  );
}

/** Every quantized layer back to a float weight (default dtype: the scales'); the rest is copied. */
export function dequantizeStep(s: DequantizeSettings = {}): MlxStep {
  checkAffine(s.bits, s.groupSize);
  const mode = checkMode(s.mode);
  return step(
    (hooks) =>
      mlxDequantize(
        {
          ...(s.bits === undefined ? {} : { bits: s.bits }),
          ...(s.groupSize === undefined ? {} : { groupSize: s.groupSize }),
          ...(mode === undefined ? {} : { mode }),
          ...(s.dtype ? { dtype: s.dtype } : {}),
          ...(s.rounding ? { variant: s.rounding } : {}),
          ...(s.globalScale === undefined ? {} : { globalScale: s.globalScale }),
        },
        hooks,
      ),
    (r) => {
      if (r.quantization.length === 0) r.warnings.push({ code: 'NothingQuantized', message: 'the input has no MLX-quantized layer (U32 *.weight with *.scales); tensors copied unchanged' });
    },
  );
}

/** New bits / group size for every affine layer; lossless when possible, else the error is measured. */
export function repackStep(s: RepackSettings): MlxStep {
  checkAffine(s.bits, s.groupSize);
  return step(
    (hooks) => mlxRepack({ bits: s.bits, groupSize: s.groupSize, ...(s.rounding ? { variant: s.rounding } : {}) }, hooks),
    (r, c) => {
      const layers = 'report' in c ? (c as RepackResult).report : [];
      r.report = layers.map((l) => ({ layer: l.path, from: l.from, to: l.to, lossless: l.lossless, maxAbsError: l.maxAbsError ?? 0 }));
    },
  );
}
