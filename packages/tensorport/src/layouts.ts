/**
 * Output layouts that are more than one format's files: the mlx-lm model directory (shards, index,
 * config.json, carried-over tokenizer files), written through an OutputTarget like every writer,
 * so the target's output policy (inputs never replaced, existing files refused without force,
 * all or nothing, fsync) applies unchanged.
 */
import { TensorportError, type OutputTarget } from '@tensorport/core';
import { MLX_CONFIG_FILE, MLX_INDEX_FILE, planMlxShards, writeMlxModel, type ConversionResult, type WriteMlxModelOptions } from '@tensorport/mlx';

export async function writeMlxModelLayout(
  result: Pick<ConversionResult, 'tensors' | 'metadata' | 'layers' | 'config'>,
  target: OutputTarget,
  options: WriteMlxModelOptions = {},
): Promise<{ files: string[]; bytes: number }> {
  if (!target.directory) throw new TensorportError('InvalidOption', `an MLX model is a directory: end '${target.name}' with '/'`, { path: target.name });
  const shards = planMlxShards(result.tensors, options.maxShardBytes).map((p) => p.fileName);
  await target.prepare([...shards, MLX_INDEX_FILE, ...(result.config ? [MLX_CONFIG_FILE] : []), ...(options.extraFiles ?? []).map((f) => f.name)]);
  const r = await writeMlxModel(result, (name) => target.create(name), options);
  await target.settle();
  return r;
}
