/** The MLX part of the `inspect` table (the layers themselves come from @tensorport/mlx's inspectQuantization). */
import type { MlxLayerInfo } from '@tensorport/lib';
import { table } from './table.ts';

/** The human table, or '' for a checkpoint without quantized layers. */
export function renderQuantization(quantization: readonly MlxLayerInfo[] | undefined): string {
  if (!quantization?.length) return '';
  const rows = quantization.map((l) => [l.layer, String(l.bits), String(l.groupSize), l.mode]);
  return `\nquantized layers: ${quantization.length}\n${table([['layer', 'bits', 'group', 'mode'], ...rows], new Set([1, 2]))}\n`;
}
