import { elementCount, type Context, type Finding } from '@tensorport/core';
import { inspectQuantization, type MlxLayerInfo } from '@tensorport/mlx';
import { llamaCppFindings } from '@tensorport/gguf';
import { asGguf, ggufMetadata, ggufSummary, type GgufInspectSummary } from './gguf-inspect.ts';
import { openInput, type PipelineOptions } from './open.ts';
import { hfQuantCheck, type HfQuantSummary } from '../hf-quant.ts';

export interface InspectTensor {
  name: string;
  dtype: string;
  shape: number[];
  bytes: number;
  /** `[begin, end)` as absolute byte positions in `file`; null when the data is not a plain byte range. */
  offsets: [number, number] | null;
  /** The file holding the data (differs per tensor in a sharded checkpoint). */
  file: string | null;
  /** GGUF: the ggml type (`dtype` is then that type's name and `shape` the element shape, as for every format). */
  ggmlType?: string;
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
  /** GGUF files: version, architecture, context length, tokenizer size, parameters and bits per weight per ggml type. */
  gguf?: GgufInspectSummary;
  /** A Hub-quantized checkpoint (config.json's quantization_config): its method and, for FP8 blocks, their layout. */
  hfQuantization?: HfQuantSummary;
}

export interface InspectOptions extends PipelineOptions {
  /** Every metadata value in full (GGUF arrays such as the vocabulary are cut otherwise). */
  fullMetadata?: boolean;
}

/** Reads a checkpoint's layout (headers only, no tensor data) into the `inspect --json` shape. */
export async function inspect(ctx: Context, options: InspectOptions = {}): Promise<InspectReport> {
  const { checkpoint, warnings } = await openInput(ctx, options);
  try {
    const gguf = asGguf(checkpoint);
    const files = new Map<string, number>();
    const tensors: InspectTensor[] = checkpoint.tensors.map((t, i) => {
      const range = t.range;
      if (range) files.set(range.source.name, range.source.size);
      const ggml = gguf?.tensors[i];
      return {
        name: t.name,
        dtype: ggml ? ggml.ggmlType.name : t.dtype,
        // the reader's array, not a copy (the checkpoint is closed before the report is returned)
        shape: (ggml ? ggml.logicalShape : t.shape) as number[],
        bytes: t.byteLength,
        offsets: range ? [range.offset, range.offset + t.byteLength] : null,
        file: range ? range.source.name : null,
        ...(ggml ? { ggmlType: ggml.ggmlType.name } : {}),
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
    const loadable = gguf ? llamaCppFindings(gguf) : [];
    warnings.push(...loadable);
    const hf = gguf ? { problems: [] } : await hfQuantCheck(ctx, checkpoint.tensors);
    warnings.push(...hf.problems);
    return {
      path: ctx.name,
      format: checkpoint.format,
      files: [...files].map(([p, bytes]) => ({ path: p, bytes })),
      metadata: gguf ? ggufMetadata(gguf, options.fullMetadata === true) : checkpoint.metadata ? Object.fromEntries(checkpoint.metadata) : null,
      tensors,
      totals: { ...totals, byDtype },
      warnings,
      ...(mlx.quantization ? { quantization: mlx.quantization } : {}),
      ...('summary' in hf && hf.summary ? { hfQuantization: hf.summary } : {}),
      ...(mlx.parameters === undefined ? {} : { quantizedParameters: mlx.parameters }),
      aliases: gguf ? {} : tiedAliases(checkpoint.metadata, new Set(tensors.map((t) => t.name))),
      ...(gguf ? { gguf: ggufSummary(gguf, loadable) } : {}),
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
