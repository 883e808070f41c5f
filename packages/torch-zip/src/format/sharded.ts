import { DEFAULT_INDEX_LIMITS, TensorportError, checkShardAgreement, parseShardIndex, toFinding, type Checkpoint, type Context, type Finding, type ShardIndex, type ValidationReport } from '@tensorport/core';
import type { TorchCheckpoint } from '../torch/assemble.ts';
import { joinTorchShards } from '../torch/shards.ts';
import { openTorchFile, validateTorchFile, validateTorchFileKeeping, type TorchOpenOptions } from './single.ts';

/** transformers' names for a sharded / single PyTorch checkpoint in a model directory. */
export const TORCH_INDEX_FILE = 'pytorch_model.bin.index.json';
export const TORCH_SINGLE_FILE = 'pytorch_model.bin';
/** Index names looked for in a folder: transformers', then diffusers'. */
export const TORCH_INDEX_FILES: readonly string[] = [TORCH_INDEX_FILE, 'diffusion_pytorch_model.bin.index.json'];
/** Single-file names: transformers', diffusers' and PEFT's (adapters). */
export const TORCH_SINGLE_FILES: readonly string[] = [TORCH_SINGLE_FILE, 'diffusion_pytorch_model.bin', 'adapter_model.bin'];

/** The first of `names` the folder holds, or null. */
export async function firstPresent(ctx: Context, names: readonly string[]): Promise<string | null> {
  for (const n of names) if (await ctx.has(n)) return n;
  return null;
}

export interface ShardedTorchCheckpoint extends Checkpoint {
  readonly format: 'torch-sharded';
  readonly warnings: Finding[];
}

/** A folder holding pytorch_model.bin.index.json or pytorch_model.bin, or an index file itself. */
export function isShardedTorch(ctx: Context): boolean {
  return ctx.entry === null || ctx.entry.endsWith('.bin.index.json');
}

/** The index's name, or null for a folder with a single pytorch_model.bin. */
async function locate(ctx: Context): Promise<string | null> {
  if (ctx.entry !== null) return ctx.entry;
  return firstPresent(ctx, TORCH_INDEX_FILES);
}

async function readIndex(ctx: Context, index: string): Promise<ShardIndex> {
  return parseShardIndex(await ctx.bytes(index, DEFAULT_INDEX_LIMITS.maxBytes));
}

function missing(ctx: Context, file: string): TensorportError {
  return new TensorportError('ShardMissing', `shard ${file} named in the index does not exist`, { path: ctx.path(file) });
}

/**
 * Opens every shard the index names (each scanned, then read) and checks index and shards agree as
 * core's sharded safetensors reader does. A tied name that a shard wrote once (its alias) counts as
 * present.
 */
export async function openShardedTorch(ctx: Context, options?: TorchOpenOptions): Promise<Checkpoint> {
  const index = await locate(ctx);
  if (index === null) return openTorchFile(ctx, (await firstPresent(ctx, TORCH_SINGLE_FILES)) ?? TORCH_SINGLE_FILE, options);
  const parsed = await readIndex(ctx, index);
  const shards: Array<{ file: string; checkpoint: TorchCheckpoint }> = [];
  try {
    for (const file of parsed.shardFiles) {
      if (!(await ctx.has(file))) throw missing(ctx, file);
      shards.push({ file, checkpoint: await openTorchFile(ctx, file, options) });
    }
    return joinShards(ctx, parsed, shards);
  } catch (e) {
    await closeAll(shards);
    throw e;
  }
}

/** The opened shards as one checkpoint, once index and shards are found to agree (throws when not). */
function joinShards(ctx: Context, parsed: ShardIndex, shards: Array<{ file: string; checkpoint: TorchCheckpoint }>): ShardedTorchCheckpoint {
  const warnings = [...parsed.warnings];
  checkShardAgreement(parsed, shards.map((s) => ({ file: s.file, tensors: s.checkpoint.tensors, aliases: Object.keys(s.checkpoint.aliases) })), warnings, TORCH_INDEX_FILE);
  // joined metadata carries each shard's tied aliases (issue 11 item 1: they were dropped here)
  const joined = joinTorchShards(shards.map((s) => ({ path: ctx.path(s.file), checkpoint: s.checkpoint })));
  warnings.push(...joined.warnings);
  return {
    format: 'torch-sharded',
    metadata: joined.metadata,
    tensors: joined.tensors,
    warnings,
    close: () => closeAll(shards),
  };
}

async function closeAll(shards: ReadonlyArray<{ checkpoint: Checkpoint }>): Promise<void> {
  await Promise.all(shards.map((s) => s.checkpoint.close().catch(() => undefined)));
}

/**
 * Every shard validated on its own (full scan and read, each pickle run once), then index and
 * shards checked together on the checkpoints those reads assembled.
 */
export async function validateShardedTorch(ctx: Context, options?: TorchOpenOptions): Promise<ValidationReport> {
  let index: string | null;
  let parsed: ShardIndex;
  try {
    index = await locate(ctx);
    if (index === null) return await validateTorchFile(ctx, (await firstPresent(ctx, TORCH_SINGLE_FILES)) ?? TORCH_SINGLE_FILE, options);
    parsed = await readIndex(ctx, index);
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
    return { valid: false, errors: [{ path: ctx.name, ...toFinding(e) }], warnings: [], files: [ctx.name] };
  }
  const errors: Finding[] = [];
  const warnings: Finding[] = [];
  const files = [ctx.path(index)];
  const shards: Array<{ file: string; checkpoint: TorchCheckpoint }> = [];
  try {
    for (const file of parsed.shardFiles) {
      files.push(ctx.path(file));
      if (!(await ctx.has(file))) {
        errors.push(toFinding(missing(ctx, file)));
        continue;
      }
      const { report, checkpoint } = await validateTorchFileKeeping(ctx, file, options);
      if (checkpoint) shards.push({ file, checkpoint });
      errors.push(...report.errors);
      warnings.push(...report.warnings);
    }
    if (errors.length === 0) {
      try {
        joinShards(ctx, parsed, shards);
      } catch (e) {
        if (!(e instanceof TensorportError)) throw e;
        const f = toFinding(e);
        errors.push({ ...f, path: f.path === undefined || !/[/\\]/.test(f.path) ? ctx.path(f.path ?? index) : f.path });
      }
    }
  } finally {
    await closeAll(shards);
  }
  return { valid: errors.length === 0, errors, warnings, files };
}
