import type { Checkpoint, Context, Finding } from '@tensorport/core';
import type { GgufOpenOptions } from '@tensorport/gguf';
import type { NpyOpenOptions, NpzOpenOptions } from '@tensorport/npz';
import type { TorchOpenOptions } from '@tensorport/torch-zip';
import { defaultRegistry, type AnyFormat, type Registry } from '../registry.ts';

/** Reader options by format name: each format gets only its own (torch's `select`, npz's `void1`…). */
export interface ReadOptions {
  torch?: TorchOpenOptions;
  npz?: NpzOpenOptions;
  npy?: NpyOpenOptions;
  gguf?: GgufOpenOptions;
  [format: string]: unknown;
}

export interface PipelineOptions {
  /** The formats to use (default: every format this package knows). */
  registry?: Registry;
  read?: ReadOptions;
}

export interface Opened {
  format: AnyFormat;
  checkpoint: Checkpoint;
  warnings: Finding[];
}

/**
 * Detects the input's format and opens it. The reader's own warnings (a checkpoint's `warnings`,
 * e.g. torch's non-tensor values left out) follow detection's, so convert and inspect say them.
 */
export async function openInput(ctx: Context, options: PipelineOptions = {}): Promise<Opened> {
  const { format, warnings } = await (options.registry ?? defaultRegistry).detect(ctx);
  const checkpoint = await format.open(ctx, options.read?.[format.name]);
  const own = (checkpoint as { warnings?: unknown }).warnings;
  return { format, checkpoint, warnings: Array.isArray(own) ? [...warnings, ...(own as Finding[])] : warnings };
}
