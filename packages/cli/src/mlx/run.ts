/**
 * `quantize`, `dequantize` and `repack` as library calls: open the input (with its config.json),
 * build the streaming conversion from @tensorport/mlx, write it all or nothing, validate it.
 */
import { TensorportError, type Finding } from '@tensorport/core';
import {
  AFFINE_BITS,
  AFFINE_GROUP_SIZES,
  dequantizeCheckpoint,
  isQuantMode,
  MIXED_RECIPES,
  parseLayerOverride,
  quantizeCheckpoint,
  repackCheckpoint,
  type AffineVariant,
  type ConversionResult,
  type FloatDType,
  type MixedRecipe,
  type QuantizedLayer,
  type QuantMode,
  type RecognizeOptions,
} from '@tensorport/mlx';
import { openMlxInput, type MlxInput } from './input.ts';
import { writeMlxOutput } from './output.ts';

export interface MlxLayerInfo {
  layer: string;
  bits: number;
  groupSize: number;
  mode: QuantMode;
}

export interface MlxCommandResult {
  input: string;
  /** Absolute path of the output file or directory. */
  output: string;
  /** Every file written (absolute paths); each safetensors file was re-read and validated. */
  files: string[];
  /** Non-weight files copied from the input model directory (tokenizer, generation config…). */
  copied: string[];
  tensors: number;
  bytes: number;
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
  /** Replace existing outputs (never the input). */
  force?: boolean;
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

export function layerInfo(layers: readonly QuantizedLayer[]): MlxLayerInfo[] {
  return layers.map((l) => ({ layer: l.path, bits: l.bits, groupSize: l.groupSize, mode: l.mode }));
}

function checkParams(bits: number | undefined, groupSize: number | undefined): void {
  if (bits !== undefined && !AFFINE_BITS.includes(bits)) throw new TensorportError('InvalidOption', `--bits must be one of ${AFFINE_BITS.join(', ')}, got ${bits}`);
  if (groupSize !== undefined && !AFFINE_GROUP_SIZES.includes(groupSize)) {
    throw new TensorportError('InvalidOption', `--group-size must be one of ${AFFINE_GROUP_SIZES.join(', ')}, got ${groupSize}`);
  }
}

function recognize(options: { bits?: number; groupSize?: number; mode?: string }, input: MlxInput): RecognizeOptions {
  if (options.mode !== undefined && !isQuantMode(options.mode)) throw new TensorportError('InvalidOption', `--mode must be affine, mxfp4, mxfp8 or nvfp4, got ${options.mode}`);
  return {
    config: input.config,
    ...(options.bits === undefined ? {} : { bits: options.bits }),
    ...(options.groupSize === undefined ? {} : { groupSize: options.groupSize }),
    ...(options.mode === undefined ? {} : { mode: options.mode as QuantMode }),
  };
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

async function run(options: Common, quantized: boolean, build: (input: MlxInput) => ConversionResult, reported: (r: ConversionResult) => QuantizedLayer[]): Promise<{ result: MlxCommandResult; conversion: ConversionResult }> {
  const input = await openMlxInput(options.input);
  try {
    let conversion: ConversionResult;
    try {
      conversion = build(input);
    } catch (e) {
      withHint(e);
    }
    const w = await writeMlxOutput(conversion, options.output, input, {
      force: options.force === true,
      quantized,
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    });
    return {
      conversion,
      result: {
        input: options.input,
        output: w.output,
        files: w.files,
        copied: w.copied,
        tensors: conversion.tensors.length,
        bytes: w.bytes,
        quantization: layerInfo(reported(conversion)),
        warnings: [...input.warnings, ...w.warnings],
      },
    };
  } finally {
    await input.checkpoint.close();
  }
}

/** Quantizes every Linear/Embedding-like float weight as mlx-lm does (docs/formats/mlx.md). */
export async function quantize(options: QuantizeOptions): Promise<MlxCommandResult> {
  const mode = options.mode ?? 'affine';
  if (!isQuantMode(mode)) throw new TensorportError('InvalidOption', `--mode must be affine, mxfp4, mxfp8 or nvfp4, got ${mode}`);
  if (mode === 'affine') checkParams(options.bits, options.groupSize);
  const recipe = options.recipe;
  if (recipe !== undefined && !(MIXED_RECIPES as readonly string[]).includes(recipe)) {
    throw new TensorportError('InvalidOption', `--recipe must be one of ${MIXED_RECIPES.join(', ')}, got ${recipe}`);
  }
  const overrides = (options.bitsFor ?? []).map(parseLayerOverride);
  const { result } = await run(
    options,
    true,
    (input) =>
      quantizeCheckpoint(input.checkpoint, {
        config: input.config ?? {},
        mode,
        ...(recipe === undefined ? {} : { recipe: recipe as MixedRecipe }),
        ...(overrides.length === 0 ? {} : { overrides }),
        ...(options.bits === undefined ? {} : { bits: options.bits }),
        ...(options.groupSize === undefined ? {} : { groupSize: options.groupSize }),
        ...(options.rounding === undefined ? {} : { variant: options.rounding }),
      }),
    (c) => c.layers,
  );
  if (result.quantization.length === 0) result.warnings.push({ code: 'NothingQuantized', message: `no tensor of ${options.input} could be quantized (float *.weight with a last dimension divisible by the group size)` });
  return result;
}

/** Every quantized layer back to a float weight (default dtype: the scales'); the rest is copied. */
export async function dequantize(options: DequantizeOptions): Promise<MlxCommandResult> {
  checkParams(options.bits, options.groupSize);
  const { result } = await run(
    options,
    false,
    (input) =>
      dequantizeCheckpoint(input.checkpoint, {
        ...recognize(options, input),
        ...(options.dtype ? { dtype: options.dtype } : {}),
        ...(options.rounding ? { variant: options.rounding } : {}),
        ...(options.globalScale === undefined ? {} : { globalScale: options.globalScale }),
      }),
    (c) => c.layers,
  );
  if (result.quantization.length === 0) result.warnings.push({ code: 'NothingQuantized', message: `${options.input} has no MLX-quantized layer (U32 *.weight with *.scales); tensors copied unchanged` });
  return result;
}

/** New bits / group size for every affine layer; lossless when possible, else the error is measured. */
export async function repack(options: RepackOptions): Promise<MlxCommandResult & { report: RepackReportEntry[] }> {
  checkParams(options.bits, options.groupSize);
  let report: RepackReportEntry[] = [];
  const { result, conversion } = await run(
    options,
    true,
    (input) => repackCheckpoint(input.checkpoint, { bits: options.bits, groupSize: options.groupSize, ...(options.rounding ? { variant: options.rounding } : {}) }, { config: input.config ?? {} }),
    (c) => c.layers,
  );
  if ('report' in conversion) {
    report = (conversion.report as import('@tensorport/mlx').RepackLayerReport[]).map((r) => ({ layer: r.path, from: r.from, to: r.to, lossless: r.lossless, maxAbsError: r.maxAbsError ?? 0 }));
  }
  return { ...result, report };
}
