import type { Checkpoint, Context, Finding, TensorDescriptor } from '@tensorport/core';

/** What a transform gives the writer: the tensors and metadata to write instead of the input's. */
export interface Transformed {
  tensors: readonly TensorDescriptor[];
  metadata: ReadonlyMap<string, string> | null;
  warnings?: Finding[];
  /** Options for the writer, over the caller's (GGUF's typed llama keys). */
  write?: object;
  /** Small files written beside the tensors in a directory output (config.json); a file output names them in a warning. */
  files?: ReadonlyArray<{ name: string; bytes: Uint8Array }>;
}

/**
 * A step between load and save (MLX quantize, dequantize, repack…): streaming descriptors in,
 * streaming descriptors out. It sees the input's context for side files such as config.json.
 */
export type Transform = (checkpoint: Checkpoint, ctx: Context) => Transformed | Promise<Transformed>;
