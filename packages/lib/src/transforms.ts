/**
 * MLX quantization as pipeline transforms: `convert({ transform: mlxQuantize({ bits: 4 }) })`
 * writes an MLX-quantized checkpoint in any format the registry writes. The model's config.json
 * beside the input (if any) settles per-layer parameters, as for the MLX commands. A directory
 * output is an mlx-lm model directory (layouts.ts) with the edited config.json; a file output
 * records the defaults in `__metadata__` (safetensors), so a result with per-layer parameters is
 * refused there.
 */
import { TensorportError, type Checkpoint, type OutputTarget } from '@tensorport/core';
import {
  dequantizeCheckpoint, formatConfigJson, MLX_CONFIG_FILE, quantizeCheckpoint, readConfig, repackCheckpoint,
  type ConversionResult, type DequantizeCheckpointOptions, type QuantizeCheckpointOptions, type RepackTarget,
} from '@tensorport/mlx';
import { hfDequantizedTensors } from './hf-quant.ts';
import { writeMlxModelLayout } from './layouts.ts';
import type { Transform, Transformed } from './pipeline/transform.ts';

export interface MlxTransformHooks {
  /** Called with the conversion (its quantized layers, a repack's per-layer report) before anything is written. */
  onResult?(result: ConversionResult): void;
}

function mlxTransform(build: (checkpoint: Checkpoint, config: Record<string, unknown> | undefined) => ConversionResult, quantized: boolean, hooks: MlxTransformHooks): Transform {
  return async (checkpoint, ctx) => {
    const config = await readConfig(ctx);
    // A Hub-quantized input (FP8 blocks) is dequantized to BF16 first, as mlx-lm loads it; its
    // quantization_config gives way to MLX's own (withQuantization).
    const hub = quantized ? hfDequantizedTensors(checkpoint, config, 'BF16') : null;
    const r = build(hub ? { ...checkpoint, tensors: hub.tensors } : checkpoint, config);
    hooks.onResult?.(r);
    const t: Transformed = {
      tensors: r.tensors,
      metadata: r.metadata,
      ...(hub ? { warnings: [{ code: 'QuantRequantized', message: `${hub.layers.length} FP8 block-scaled layer(s) dequantized to BF16 (as mlx-lm loads them), then quantized by MLX: a second rounding, not measured here (tensorport diff against a dequantized copy measures it)` }] } : {}),
      layout: {
        write: (tensors, metadata, target, options) =>
          writeMlxModelLayout({ tensors, metadata: withEntries(metadata, options.metadata), layers: r.layers }, target, {
            ...(options.maxShardSize === undefined ? {} : { maxShardBytes: options.maxShardSize }),
            ...(options.jobs === undefined ? {} : { jobs: options.jobs }),
            ...(options.onProgress ? { onProgress: options.onProgress } : {}),
          }),
        files: r.config ? [{ name: MLX_CONFIG_FILE, bytes: new TextEncoder().encode(formatConfigJson(r.config)) }] : [],
      },
    };
    if (quantized) t.checkOutput = (target) => refuseMixed(r, target);
    return t;
  };
}

/** `--metadata` entries over the step's own `__metadata__`, as the safetensors writer merges them. */
function withEntries(metadata: ReadonlyMap<string, string> | null, entries: Readonly<Record<string, string>> | undefined): ReadonlyMap<string, string> | null {
  if (entries === undefined) return metadata;
  return new Map([...(metadata ?? []), ...Object.entries(entries)]);
}

/** Per-layer bits, group sizes or modes live only in config.json: a lone file would be misread later. */
function refuseMixed(result: ConversionResult, target: OutputTarget): void {
  if (target.directory) return;
  const bits = result.metadata.get('quantization_bits');
  const gs = result.metadata.get('quantization_group_size');
  // A layer of another mode counts too: the file's defaults would be applied to it when read back.
  const mode = result.metadata.get('quantization_mode') ?? 'affine';
  const odd = result.layers.find((l) => l.mode !== mode || String(l.bits) !== bits || String(l.groupSize) !== gs);
  if (odd) {
    throw new TensorportError(
      'InvalidOption',
      `layer ${odd.path} is ${odd.mode} with ${odd.bits} bits/group ${odd.groupSize}, unlike the file's defaults (${bits} bits/group ${gs}, ${mode}): write to a directory (end '${target.name}' with '/') so config.json records it`,
      { path: target.name },
    );
  }
}

export function mlxQuantize(options: Omit<QuantizeCheckpointOptions, 'config'> = {}, hooks: MlxTransformHooks = {}): Transform {
  return mlxTransform((checkpoint, config) => quantizeCheckpoint(checkpoint, { ...options, config: config ?? {} }), true, hooks);
}

export function mlxDequantize(options: Omit<DequantizeCheckpointOptions, 'config'> = {}, hooks: MlxTransformHooks = {}): Transform {
  return mlxTransform((checkpoint, config) => dequantizeCheckpoint(checkpoint, { ...options, ...(config ? { config } : {}) }), false, hooks);
}

export function mlxRepack(target: RepackTarget, hooks: MlxTransformHooks = {}): Transform {
  return mlxTransform((checkpoint, config) => repackCheckpoint(checkpoint, target, { config: config ?? {} }), true, hooks);
}
