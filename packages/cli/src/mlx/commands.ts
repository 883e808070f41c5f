/**
 * `quantize`, `dequantize` and `repack` are the library's path-based convert with an MLX transform
 * (tensorport's transforms.ts): one open, one write through the output policy (all or nothing,
 * --force, --no-fsync), one read back (validation, shapes, --verify). A directory output is the
 * mlx-lm model directory with its config.json and the input model's side files; a file output is
 * any format the registry writes. What is left here is the options' checks and the command's report.
 */
import { TensorportError, type Finding } from '@tensorport/core';
import {
  AFFINE_BITS, AFFINE_GROUP_SIZES, isQuantMode, layerInfo, MIXED_RECIPES, parseLayerOverride,
  type AffineVariant, type ConversionResult, type FloatDType, type MixedRecipe, type MlxLayerInfo, type QuantMode, type RepackLayerReport, type RepackResult,
} from '@tensorport/mlx';
import { convertPath, mlxDequantize, mlxQuantize, mlxRepack, type MlxTransformHooks, type Transform } from 'tensorport/node';

export type { MlxLayerInfo } from '@tensorport/mlx';

export interface MlxCommandResult {
  input: string;
  /** Absolute path of the output file or directory. */
  output: string;
  /** Output format (safetensors, npz, torch…). */
  to: string;
  /** Every file written (absolute paths): the tensors' files, each re-read and validated, then config.json and the copied files. */
  files: string[];
  /** Non-weight files copied from the input model directory (tokenizer, generation config…). */
  copied: string[];
  tensors: number;
  bytes: number;
  /** True when the output was re-read and diffed equal to what was written (--verify). */
  verified: boolean;
  /** The quantized layers of the output (quantize, repack) or of the input (dequantize). */
  quantization: MlxLayerInfo[];
  warnings: Finding[];
}

export interface RepackReportEntry {
  layer: string;
  from: { bits: number; groupSize: number };
  to: { bits: number; groupSize: number };
  lossless: boolean;
  /** Largest |new − original| over the dequantized weights (0 when lossless). */
  maxAbsError: number;
}

interface Common {
  input: string;
  output: string;
  /** Replace existing outputs (never the input); also removes stale shards of the output directory. */
  force?: boolean;
  /** fsync before publishing (default true). */
  fsync?: boolean;
  /** Re-read the output and diff every value against what was written. */
  verify?: boolean;
  /** Output format for a file output (default from its extension, else safetensors). */
  to?: string;
  onProgress?: (done: number, total: number) => void;
}

export interface QuantizeOptions extends Common {
  bits?: number;
  groupSize?: number;
  /** affine (default), mxfp4, mxfp8 or nvfp4. */
  mode?: string;
  /** One of mlx-lm's mixed recipes: mixed_2_6, mixed_3_4, mixed_3_6, mixed_4_6 (affine only). */
  recipe?: string;
  /** Per-layer rules `regex=bits`, `regex=bits/group_size` or `regex=float`; the first match decides. */
  bitsFor?: string[];
  /** Which MLX kernel's rounding to reproduce: `gpu` (Metal, mlx_lm.convert on a Mac; default) or `cpu`. */
  rounding?: AffineVariant;
}

export interface DequantizeOptions extends Common {
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

export interface RepackOptions extends Common {
  bits: number;
  groupSize: number;
  rounding?: AffineVariant;
}

function checkParams(bits: number | undefined, groupSize: number | undefined): void {
  if (bits !== undefined && !AFFINE_BITS.includes(bits)) throw new TensorportError('InvalidOption', `--bits must be one of ${AFFINE_BITS.join(', ')}, got ${bits}`);
  if (groupSize !== undefined && !AFFINE_GROUP_SIZES.includes(groupSize)) {
    throw new TensorportError('InvalidOption', `--group-size must be one of ${AFFINE_GROUP_SIZES.join(', ')}, got ${groupSize}`);
  }
}

function checkMode(mode: string | undefined): QuantMode | undefined {
  if (mode !== undefined && !isQuantMode(mode)) throw new TensorportError('InvalidOption', `--mode must be affine, mxfp4, mxfp8 or nvfp4, got ${mode}`);
  return mode;
}

/** The library's message plus how to settle it from the command line. */
function withHint(e: unknown): never {
  if (e instanceof TensorportError && e.code === 'MlxAmbiguousQuantization') {
    throw new TensorportError(e.code, `${e.message}; pass --bits and --group-size (or give the model directory with its config.json)`, {
      ...(e.tensor === undefined ? {} : { tensor: e.tensor }),
      cause: e,
    });
  }
  throw e;
}

async function run(options: Common, transform: (hooks: MlxTransformHooks) => Transform): Promise<{ result: MlxCommandResult; conversion: ConversionResult }> {
  let conversion: ConversionResult | null = null;
  const hooks: MlxTransformHooks = {
    onResult: (c) => {
      conversion = c;
    },
  };
  const r = await convertPath({
    input: options.input,
    output: options.output,
    transform: transform(hooks),
    force: options.force === true,
    fsync: options.fsync !== false,
    ...(options.verify ? { verify: true } : {}),
    ...(options.to ? { to: options.to } : {}),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  }).catch(withHint);
  const c = conversion as ConversionResult | null;
  if (c === null) throw new TensorportError('InvalidOption', `${options.input}: the MLX transform did not run`);
  return {
    conversion: c,
    result: {
      input: options.input,
      output: r.output,
      to: r.to,
      files: r.files,
      copied: r.copied,
      tensors: r.tensors,
      bytes: r.bytes,
      verified: r.verified,
      quantization: layerInfo(c.layers),
      // MLX stores every BF16 array as '<V2': expected here, not worth a warning each.
      warnings: r.warnings.filter((w) => w.code !== 'NpyV2AsBF16'),
    },
  };
}

/** Quantizes every Linear/Embedding-like float weight as mlx-lm does (docs/formats/mlx.md). */
export async function quantize(options: QuantizeOptions): Promise<MlxCommandResult> {
  const mode = checkMode(options.mode ?? 'affine')!;
  if (mode === 'affine') checkParams(options.bits, options.groupSize);
  const recipe = options.recipe;
  if (recipe !== undefined && !(MIXED_RECIPES as readonly string[]).includes(recipe)) {
    throw new TensorportError('InvalidOption', `--recipe must be one of ${MIXED_RECIPES.join(', ')}, got ${recipe}`);
  }
  const overrides = (options.bitsFor ?? []).map(parseLayerOverride);
  const { result } = await run(options, (hooks) =>
    mlxQuantize(
      {
        mode,
        ...(recipe === undefined ? {} : { recipe: recipe as MixedRecipe }),
        ...(overrides.length === 0 ? {} : { overrides }),
        ...(options.bits === undefined ? {} : { bits: options.bits }),
        ...(options.groupSize === undefined ? {} : { groupSize: options.groupSize }),
        ...(options.rounding === undefined ? {} : { variant: options.rounding }),
      },
      hooks,
    ),
  );
  if (result.quantization.length === 0) result.warnings.push({ code: 'NothingQuantized', message: `no tensor of ${options.input} could be quantized (float *.weight with a last dimension divisible by the group size)` });
  return result;
}

/** Every quantized layer back to a float weight (default dtype: the scales'); the rest is copied. */
export async function dequantize(options: DequantizeOptions): Promise<MlxCommandResult> {
  checkParams(options.bits, options.groupSize);
  const mode = checkMode(options.mode);
  const { result } = await run(options, (hooks) =>
    mlxDequantize(
      {
        ...(options.bits === undefined ? {} : { bits: options.bits }),
        ...(options.groupSize === undefined ? {} : { groupSize: options.groupSize }),
        ...(mode === undefined ? {} : { mode }),
        ...(options.dtype ? { dtype: options.dtype } : {}),
        ...(options.rounding ? { variant: options.rounding } : {}),
        ...(options.globalScale === undefined ? {} : { globalScale: options.globalScale }),
      },
      hooks,
    ),
  );
  if (result.quantization.length === 0) result.warnings.push({ code: 'NothingQuantized', message: `${options.input} has no MLX-quantized layer (U32 *.weight with *.scales); tensors copied unchanged` });
  return result;
}

/** New bits / group size for every affine layer; lossless when possible, else the error is measured. */
export async function repack(options: RepackOptions): Promise<MlxCommandResult & { report: RepackReportEntry[] }> {
  checkParams(options.bits, options.groupSize);
  const { result, conversion } = await run(options, (hooks) => mlxRepack({ bits: options.bits, groupSize: options.groupSize, ...(options.rounding ? { variant: options.rounding } : {}) }, hooks));
  const layers: RepackLayerReport[] = 'report' in conversion ? (conversion as RepackResult).report : [];
  const report = layers.map((r) => ({ layer: r.path, from: r.from, to: r.to, lossless: r.lossless, maxAbsError: r.maxAbsError ?? 0 }));
  return { ...result, report };
}
