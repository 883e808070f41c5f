/**
 * MLX quantization as pipeline transforms: `convert({ transform: mlxQuantize({ bits: 4 }) })`
 * writes an MLX-quantized checkpoint in any format the registry writes. The model's config.json
 * beside the input (if any) settles per-layer parameters, as for the MLX commands.
 */
import {
  dequantizeCheckpoint, quantizeCheckpoint, readConfig, repackCheckpoint,
  type ConversionResult, type DequantizeCheckpointOptions, type QuantizeCheckpointOptions, type RepackTarget,
} from '@tensorport/mlx';
import type { Transform, Transformed } from './pipeline/transform.ts';

function transformed(r: ConversionResult): Transformed {
  return { tensors: r.tensors, metadata: r.metadata };
}

export function mlxQuantize(options: Omit<QuantizeCheckpointOptions, 'config'> = {}): Transform {
  return async (checkpoint, ctx) => transformed(quantizeCheckpoint(checkpoint, { ...options, config: (await readConfig(ctx)) ?? {} }));
}

export function mlxDequantize(options: Omit<DequantizeCheckpointOptions, 'config'> = {}): Transform {
  return async (checkpoint, ctx) => {
    const config = await readConfig(ctx);
    return transformed(dequantizeCheckpoint(checkpoint, { ...options, ...(config ? { config } : {}) }));
  };
}

export function mlxRepack(target: RepackTarget): Transform {
  return async (checkpoint, ctx) => transformed(repackCheckpoint(checkpoint, target, { config: (await readConfig(ctx)) ?? {} }));
}
