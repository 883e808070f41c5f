import type { Checkpoint, Context, Finding, OutputTarget, SafetensorsWriteOptions, TensorDescriptor, WriteCommon, WriteResult } from '@tensorport/core';

/** A small file written beside the tensors (config.json, a tokenizer). */
export interface SideFile {
  readonly name: string;
  readonly bytes: Uint8Array;
}

/**
 * How a transform's result is laid out in a directory output instead of the format's own file
 * names (the mlx-lm model directory: its shard names, an index always, config.json).
 */
export interface DirectoryLayout {
  /** `options` are the safetensors writer's (shard size, jobs, metadata entries), as for a plain directory output. */
  write(tensors: readonly TensorDescriptor[], metadata: ReadonlyMap<string, string> | null, target: OutputTarget, options: SafetensorsWriteOptions & WriteCommon): Promise<WriteResult>;
  /** Side files that belong to the layout (its config.json): written with it, never warned about for a file output. */
  files?: readonly SideFile[];
}

/** What a transform gives the writer: the tensors and metadata to write instead of the input's. */
export interface Transformed {
  tensors: readonly TensorDescriptor[];
  metadata: ReadonlyMap<string, string> | null;
  warnings?: Finding[];
  /** Options for the writer, over the caller's (GGUF's typed llama keys). */
  write?: object;
  /** Small files written beside the tensors in a directory output (config.json); a file output names them in a warning. */
  files?: readonly SideFile[];
  /** A safetensors directory output is written this way (see DirectoryLayout). */
  layout?: DirectoryLayout;
  /** Throws (InvalidOption) when the output cannot describe the result, before anything is written (per-layer parameters in a lone file). */
  checkOutput?(target: OutputTarget, format: string): void;
}

/**
 * A step between load and save (MLX quantize, dequantize, repack…): streaming descriptors in,
 * streaming descriptors out. It sees the input's context for side files such as config.json.
 */
export type Transform = (checkpoint: Checkpoint, ctx: Context) => Transformed | Promise<Transformed>;
