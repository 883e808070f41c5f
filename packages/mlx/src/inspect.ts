/** What `inspect` shows of MLX quantization, over any Context (a model directory or dropped files). */
import { TensorportError, toFinding, type Checkpoint, type Context, type Finding } from '@tensorport/core';
import { findQuantizedLayers, type QuantizedLayer } from './layers.ts';
import { MLX_CONFIG_FILE, totalParameters } from './model.ts';
import { rememberConfigText, type QuantMode } from './config.ts';

/** config.json files are a few KiB; anything past this is refused unread. */
export const MAX_CONFIG_BYTES = 16 * 1024 * 1024;

export interface MlxLayerInfo {
  layer: string;
  bits: number;
  groupSize: number;
  mode: QuantMode;
}

export function layerInfo(layers: readonly QuantizedLayer[]): MlxLayerInfo[] {
  return layers.map((l) => ({ layer: l.path, bits: l.bits, groupSize: l.groupSize, mode: l.mode }));
}

/** The config.json beside the input (in its folder), parsed; undefined when there is none. */
export async function readConfig(ctx: Context): Promise<Record<string, unknown> | undefined> {
  if (!(await ctx.has(MLX_CONFIG_FILE))) return undefined;
  const file = ctx.path(MLX_CONFIG_FILE);
  const bytes = await ctx.bytes(MLX_CONFIG_FILE, MAX_CONFIG_BYTES, 'MlxInvalidConfig');
  let value: unknown;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    value = JSON.parse(text);
  } catch (e) {
    throw new TensorportError('MlxInvalidConfig', `${file} is not valid JSON: ${(e as Error).message}`, { path: file, cause: e });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new TensorportError('MlxInvalidConfig', `${file} does not hold a JSON object`, { path: file });
  // written back as this text, edited (config.ts: Python's 0.0 must not become 0)
  rememberConfigText(value as Record<string, unknown>, text);
  return value as Record<string, unknown>;
}

/**
 * Quantized layers of an opened checkpoint, settled by the config.json beside it when there is
 * one, and the parameter count as mlx-lm states it (`total_parameters`: logical weights, scales
 * and biases not counted). A checkpoint whose quantization cannot be settled is still inspected:
 * the reason becomes a warning and both are left out.
 */
export async function inspectQuantization(
  ctx: Context,
  checkpoint: Pick<Checkpoint, 'tensors' | 'metadata'>,
): Promise<{ quantization?: MlxLayerInfo[]; parameters?: number; warnings: Finding[] }> {
  try {
    const layers = findQuantizedLayers(checkpoint, { config: await readConfig(ctx) });
    return layers.length > 0 ? { quantization: layerInfo(layers), parameters: totalParameters(checkpoint.tensors, layers), warnings: [] } : { warnings: [] };
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
    return { warnings: [toFinding(e)] };
  }
}
