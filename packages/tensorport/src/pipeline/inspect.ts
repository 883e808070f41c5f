import { elementCount, type Context, type Finding } from '@tensorport/core';
import { inspectQuantization, type MlxLayerInfo } from '@tensorport/mlx';
import { openInput, type PipelineOptions } from './open.ts';

export interface InspectTensor {
  name: string;
  dtype: string;
  shape: number[];
  bytes: number;
  /** `[begin, end)` as absolute byte positions in `file`; null when the data is not a plain byte range. */
  offsets: [number, number] | null;
  /** The file holding the data (differs per tensor in a sharded checkpoint). */
  file: string | null;
}

export interface DtypeTotal {
  tensors: number;
  parameters: number;
  bytes: number;
}

export interface InspectReport {
  path: string;
  format: string;
  /** Files that hold tensor data, with their sizes. */
  files: Array<{ path: string; bytes: number }>;
  metadata: Record<string, string> | null;
  tensors: InspectTensor[];
  totals: DtypeTotal & { byDtype: Record<string, DtypeTotal> };
  warnings: Finding[];
  /** MLX-quantized layers (config.json beside the input settles bits/group size); absent when none. */
  quantization?: MlxLayerInfo[];
  /**
   * With quantized layers: the parameter count as mlx-lm states it (its index's `total_parameters`:
   * packed words × 32 / bits, scales and biases not counted). `totals.parameters` counts stored
   * elements, as the Hub's safetensors metadata does.
   */
  quantizedParameters?: number;
  /** Tied names stored once: metadata entries `removed -> kept` whose kept name is a tensor (as convert.py records them). */
  aliases: Record<string, string>;
}

/** Reads a checkpoint's layout (headers only, no tensor data) into the `inspect --json` shape. */
export async function inspect(ctx: Context, options: PipelineOptions = {}): Promise<InspectReport> {
  const { checkpoint, warnings } = await openInput(ctx, options);
  try {
    const files = new Map<string, number>();
    const tensors: InspectTensor[] = checkpoint.tensors.map((t) => {
      const range = t.range;
      if (range) files.set(range.source.name, range.source.size);
      return {
        name: t.name,
        dtype: t.dtype,
        shape: [...t.shape],
        bytes: t.byteLength,
        offsets: range ? [range.offset, range.offset + t.byteLength] : null,
        file: range ? range.source.name : null,
      };
    });
    if (files.size === 0) files.set(ctx.name, ctx.entry === null ? 0 : await ctx.size());
    const byDtype: Record<string, DtypeTotal> = {};
    const totals = { tensors: 0, parameters: 0, bytes: 0 };
    for (const t of tensors) {
      const parameters = elementCount(t.shape);
      const d = (byDtype[t.dtype] ??= { tensors: 0, parameters: 0, bytes: 0 });
      d.tensors++;
      d.parameters += parameters;
      d.bytes += t.bytes;
      totals.tensors++;
      totals.parameters += parameters;
      totals.bytes += t.bytes;
    }
    const mlx = await inspectQuantization(ctx, checkpoint);
    warnings.push(...mlx.warnings);
    return {
      path: ctx.name,
      format: checkpoint.format,
      files: [...files].map(([p, bytes]) => ({ path: p, bytes })),
      metadata: checkpoint.metadata ? Object.fromEntries(checkpoint.metadata) : null,
      tensors,
      totals: { ...totals, byDtype },
      warnings,
      ...(mlx.quantization ? { quantization: mlx.quantization } : {}),
      ...(mlx.parameters === undefined ? {} : { quantizedParameters: mlx.parameters }),
      aliases: tiedAliases(checkpoint.metadata, new Set(tensors.map((t) => t.name))),
    };
  } finally {
    await checkpoint.close();
  }
}

/** `removed -> kept` metadata entries naming a stored tensor and not themselves one: the names torch sees besides the stored ones. */
function tiedAliases(metadata: ReadonlyMap<string, string> | null, names: ReadonlySet<string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of metadata ?? []) if (names.has(v) && !names.has(k)) out[k] = v;
  return out;
}
