import { readFile, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { DEFAULT_INDEX_LIMITS, TensorportError, checkShardAgreement, parseShardIndex, toFinding, type Checkpoint, type Finding, type ShardIndex } from '@tensorport/core';
import { joinTorchShards, type TorchCheckpoint } from '@tensorport/torch-zip';
import type { OpenOptions, ValidationReport } from './registry.ts';
import { openTorchFile, validateTorchFile } from './torch.ts';

/** transformers' names for a sharded / single PyTorch checkpoint in a model directory. */
export const TORCH_INDEX_FILE = 'pytorch_model.bin.index.json';
export const TORCH_SINGLE_FILE = 'pytorch_model.bin';

export interface ShardedTorchCheckpoint extends Checkpoint {
  readonly format: 'torch-sharded';
  readonly warnings: Finding[];
}

/** A directory holding pytorch_model.bin.index.json or pytorch_model.bin, or an index file itself. */
export async function isShardedTorchPath(path: string): Promise<boolean> {
  const info = await stat(path).catch(() => null);
  if (info?.isDirectory()) return true;
  return info?.isFile() === true && path.endsWith('.bin.index.json');
}

/** Where the index is, or null for a directory with a single pytorch_model.bin. */
async function locate(path: string): Promise<{ index: string | null; dir: string }> {
  const info = await stat(path);
  if (!info.isDirectory()) return { index: path, dir: dirname(path) };
  const index = join(path, TORCH_INDEX_FILE);
  if (await stat(index).then((s) => s.isFile(), () => false)) return { index, dir: path };
  return { index: null, dir: path };
}

async function readIndex(indexPath: string): Promise<ShardIndex> {
  const size = (await stat(indexPath)).size;
  if (size > DEFAULT_INDEX_LIMITS.maxBytes) {
    throw new TensorportError('InvalidIndex', `${indexPath} is ${size} bytes, more than the ${DEFAULT_INDEX_LIMITS.maxBytes} allowed`, { path: indexPath });
  }
  return parseShardIndex(await readFile(indexPath));
}

/**
 * Opens every shard the index names (each scanned, then read by openTorchCheckpoint) and checks
 * index and shards agree as core's sharded safetensors reader does: every shard tensor is in the
 * weight_map under that shard, every weight_map entry is in the shard it names. A tied name that
 * a shard wrote once (its alias) counts as present.
 */
export async function openShardedTorch(path: string, options?: OpenOptions): Promise<Checkpoint> {
  const { index: indexPath, dir } = await locate(path);
  if (indexPath === null) return openTorchFile(join(dir, TORCH_SINGLE_FILE), options);
  const index = await readIndex(indexPath);
  const shards: Array<{ file: string; checkpoint: TorchCheckpoint }> = [];
  try {
    for (const file of index.shardFiles) {
      const shardPath = join(dir, file);
      if (!(await stat(shardPath).then((s) => s.isFile(), () => false))) {
        throw new TensorportError('ShardMissing', `shard ${file} named in the index does not exist`, { path: shardPath });
      }
      shards.push({ file, checkpoint: await openTorchFile(shardPath, options) });
    }
    const warnings = [...index.warnings];
    checkShardAgreement(index, shards.map((s) => ({ file: s.file, tensors: s.checkpoint.tensors, aliases: Object.keys(s.checkpoint.aliases) })), warnings, TORCH_INDEX_FILE);
    const joined = joinTorchShards(shards.map((s) => ({ path: join(dir, s.file), checkpoint: s.checkpoint })));
    warnings.push(...joined.warnings);
    const checkpoint: ShardedTorchCheckpoint = {
      format: 'torch-sharded',
      metadata: joined.metadata,
      tensors: joined.tensors,
      warnings,
      close: () => closeAll(shards),
    };
    return checkpoint;
  } catch (e) {
    await closeAll(shards);
    throw e;
  }
}

async function closeAll(shards: ReadonlyArray<{ checkpoint: Checkpoint }>): Promise<void> {
  await Promise.all(shards.map((s) => s.checkpoint.close().catch(() => undefined)));
}

/** Every shard validated on its own (full scan and read), then index and shards checked together. */
export async function validateShardedTorch(path: string, options?: OpenOptions): Promise<ValidationReport> {
  let located: { index: string | null; dir: string };
  let index: ShardIndex;
  try {
    located = await locate(path);
    if (located.index === null) return await validateTorchFile(join(located.dir, TORCH_SINGLE_FILE), options);
    index = await readIndex(located.index);
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
    return { valid: false, errors: [{ path, ...toFinding(e) }], warnings: [], files: [path] };
  }
  const errors: Finding[] = [];
  const warnings: Finding[] = [];
  const files = [located.index];
  for (const file of index.shardFiles) {
    const shardPath = join(located.dir, file);
    files.push(shardPath);
    if (!(await stat(shardPath).then((s) => s.isFile(), () => false))) {
      errors.push({ code: 'ShardMissing', message: `shard ${file} named in the index does not exist`, path: shardPath });
      continue;
    }
    const r = await validateTorchFile(shardPath, options);
    errors.push(...r.errors);
    warnings.push(...r.warnings);
  }
  if (errors.length === 0) {
    try {
      const c = await openShardedTorch(path, options);
      await c.close();
    } catch (e) {
      if (!(e instanceof TensorportError)) throw e;
      const f = toFinding(e);
      errors.push({ ...f, path: f.path === undefined || !f.path.includes('/') ? join(located.dir, f.path ?? basename(located.index)) : f.path });
    }
  }
  return { valid: errors.length === 0, errors, warnings, files };
}
