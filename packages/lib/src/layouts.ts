/**
 * Output layouts that are more than one format's files: the mlx-lm model directory (shards, index,
 * config.json, carried-over tokenizer files), written through an OutputTarget like every writer,
 * so the target's output policy (inputs never replaced, existing files and stale shards refused
 * without force, all or nothing, fsync) applies unchanged.
 */
import { TensorportError, type OutputTarget, type WriteResult } from '@tensorport/core';
import { MLX_CONFIG_FILE, MLX_INDEX_FILE, planMlxShards, writeMlxModel, type ConversionResult, type WriteMlxModelOptions } from '@tensorport/mlx';

/** What the layout writes: a conversion's tensors and layers; config.json only when `config` is given (convert passes it as a side file). */
export interface MlxModelContent {
  tensors: ConversionResult['tensors'] | Readonly<ConversionResult['tensors']>;
  metadata: ReadonlyMap<string, string> | null;
  layers: ConversionResult['layers'];
  config?: Record<string, unknown>;
}

export async function writeMlxModelLayout(result: MlxModelContent, target: OutputTarget, options: WriteMlxModelOptions = {}): Promise<WriteResult> {
  if (!target.directory) throw new TensorportError('InvalidOption', `an MLX model is a directory: end '${target.name}' with '/'`, { path: target.name });
  const shards = planMlxShards(result.tensors, options.maxShardBytes).map((p) => p.fileName);
  await target.prepare([...shards, MLX_INDEX_FILE, ...(result.config ? [MLX_CONFIG_FILE] : []), ...(options.extraFiles ?? []).map((f) => f.name)]);
  // writeMlxModel only reads the tensors and the metadata.
  const content = { ...result, tensors: [...result.tensors], metadata: new Map(result.metadata ?? []) };
  const r = await writeMlxModel(content, (name) => target.create(name), options);
  await target.settle();
  return r;
}
