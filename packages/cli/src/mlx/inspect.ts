/** The MLX part of `inspect`: each quantized layer's bits, group size and mode. */
import { TensorportError, toFinding, type Checkpoint, type Finding } from '@tensorport/core';
import { findQuantizedLayers } from '@tensorport/mlx';
import { readModelConfig } from '@tensorport/mlx/node';
import { table } from '../render.ts';
import { layerInfo, type MlxLayerInfo } from './run.ts';

/**
 * Quantized layers of an opened checkpoint, settled by the config.json beside `path` when there is
 * one. A checkpoint whose quantization cannot be settled is still inspected: the reason becomes a
 * warning and the list is left out.
 */
export async function inspectQuantization(path: string, checkpoint: Pick<Checkpoint, 'tensors' | 'metadata'>): Promise<{ quantization?: MlxLayerInfo[]; warnings: Finding[] }> {
  try {
    const layers = findQuantizedLayers(checkpoint, { config: await readModelConfig(path) });
    return layers.length > 0 ? { quantization: layerInfo(layers), warnings: [] } : { warnings: [] };
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
    return { warnings: [toFinding(e)] };
  }
}

/** The human table, or '' for a checkpoint without quantized layers. */
export function renderQuantization(quantization: readonly MlxLayerInfo[] | undefined): string {
  if (!quantization?.length) return '';
  const rows = quantization.map((l) => [l.layer, String(l.bits), String(l.groupSize), l.mode]);
  return `\nquantized layers: ${quantization.length}\n${table([['layer', 'bits', 'group', 'mode'], ...rows], new Set([1, 2]))}\n`;
}
