import type { Finding, TensorDescriptor } from '@tensorport/core';
import type { TorchCheckpoint } from './assemble.ts';

/** The shards of a sharded `pytorch_model-*.bin` checkpoint as one: what each shard held, together. */
export interface JoinedTorchShards {
  readonly tensors: TensorDescriptor[];
  /** `format: pt` and every shard's tied aliases (`removed -> kept`), so no tied name is lost. */
  readonly metadata: Map<string, string>;
  readonly aliases: Record<string, string>;
  /** Each shard's warnings, with the shard's path where the finding has none. */
  readonly warnings: Finding[];
}

/**
 * Joins opened shards in the given order. huggingface_hub puts names sharing a storage in the same
 * shard, and each shard's reader wrote such a group once: the aliases it recorded must travel with
 * the joined tensors, or the tied names vanish (a sharded tied Llama lost `model.embed_tokens.weight`).
 */
export function joinTorchShards(shards: ReadonlyArray<{ readonly path: string; readonly checkpoint: TorchCheckpoint }>): JoinedTorchShards {
  const tensors: TensorDescriptor[] = [];
  const aliases: Record<string, string> = Object.create(null) as Record<string, string>;
  const warnings: Finding[] = [];
  for (const { path, checkpoint } of shards) {
    tensors.push(...checkpoint.tensors);
    Object.assign(aliases, checkpoint.aliases);
    warnings.push(...checkpoint.warnings.map((f) => (f.path === undefined ? { ...f, path } : f)));
  }
  const names = new Set(tensors.map((t) => t.name));
  const metadata = new Map<string, string>([['format', 'pt']]);
  for (const [removed, kept] of Object.entries(aliases)) if (!metadata.has(removed) && !names.has(removed)) metadata.set(removed, kept);
  return { tensors, metadata, aliases, warnings };
}
