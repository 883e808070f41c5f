import { detectFormat } from '../detect.ts';
import { TensorportError, toFinding, type Finding } from '../errors.ts';
import type { Context, Format, ValidationReport } from '../format/types.ts';
import { DEFAULT_INDEX_LIMITS, parseShardIndex, SHARD_INDEX_FILE, SHARD_INDEX_FILES, SINGLE_CHECKPOINT_FILE, SINGLE_CHECKPOINT_FILES } from './index-file.ts';
import { SafetensorsFile } from './reader.ts';
import { openShardedCheckpoint, planShards, writeSharded, type ShardedCheckpoint } from './sharded.ts';
import { outputMetadata, writeSafetensors } from './writer.ts';

const INDEX_SUFFIX = '.safetensors.index.json';

export interface SafetensorsWriteOptions {
  /** Directory outputs: largest shard in tensor bytes (default 5·10^9, HF's "5GB"). */
  maxShardSize?: number;
  /** `__metadata__` entries added to (or replacing) the input's (`--metadata KEY=VALUE`). */
  metadata?: Readonly<Record<string, string>>;
  /** Entries for keys the input's metadata lacks; the convert pipeline passes `{"format": "pt"}`. */
  defaultMetadata?: Readonly<Record<string, string>>;
  /** Directory outputs: shards written at the same time (writeSharded's `jobs`; the bytes are the same). */
  jobs?: number;
}

/** Where a context's safetensors checkpoint starts: its index, or its single file. */
async function layout(ctx: Context): Promise<{ index: string | null; file: string | null }> {
  if (ctx.entry !== null) return ctx.entry.endsWith('.index.json') ? { index: ctx.entry, file: null } : { index: null, file: ctx.entry };
  // transformers', diffusers' and PEFT's names (index-file.ts), an index before a single file
  for (const index of SHARD_INDEX_FILES) if (await ctx.has(index)) return { index, file: null };
  for (const file of SINGLE_CHECKPOINT_FILES) if (await ctx.has(file)) return { index: null, file };
  throw new TensorportError('UnknownFormat', `${ctx.name} is a directory without ${[...SHARD_INDEX_FILES, ...SINGLE_CHECKPOINT_FILES].join(', ')}`, { path: ctx.name });
}

/** The shards an index names, each opened through the context (one open per file, shared). */
export async function openShardedContext(ctx: Context, index: string): Promise<ShardedCheckpoint> {
  const bytes = await ctx.bytes(index, DEFAULT_INDEX_LIMITS.maxBytes);
  return openShardedCheckpoint(bytes, async (file) => {
    if (!(await ctx.has(file))) {
      throw new TensorportError('ShardMissing', `shard ${file} named in ${index} does not exist in ${ctx.folder.name}`, { path: ctx.path(file) });
    }
    return ctx.source(file);
  }, { readHeader: (file) => ctx.safetensorsHeader(file) });
}

/** safetensors: one file, or an index with its shards (transformers' layout), or a directory holding either. */
export const safetensorsFormat: Format<object, SafetensorsWriteOptions> = {
  name: 'safetensors',
  extensions: ['.safetensors'],

  async sniff(ctx) {
    if (ctx.entry === null) {
      for (const name of [...SHARD_INDEX_FILES, ...SINGLE_CHECKPOINT_FILES]) if (await ctx.has(name)) return true;
      return false;
    }
    const kind = detectFormat(await ctx.head(), await ctx.size());
    return kind === 'safetensors' || (kind === 'json' && ctx.entry.endsWith(INDEX_SUFFIX));
  },

  async open(ctx): Promise<SafetensorsFile | ShardedCheckpoint> {
    const { index, file } = await layout(ctx);
    return index !== null ? openShardedContext(ctx, index) : new SafetensorsFile(await ctx.source(file!), await ctx.safetensorsHeader(file!));
  },

  async write(tensors, input, target, options = {}) {
    const progress = options.onProgress ? { onProgress: options.onProgress } : {};
    const metadata = outputMetadata(input, options.metadata, options.defaultMetadata);
    if (!target.directory) {
      await target.prepare([SINGLE_CHECKPOINT_FILE]);
      const { bytes } = await writeSafetensors(tensors, metadata, await target.create(SINGLE_CHECKPOINT_FILE), progress);
      return { files: [SINGLE_CHECKPOINT_FILE], bytes };
    }
    const plans = planShards(tensors, options.maxShardSize);
    const names = plans.length > 1 ? [...plans.map((p) => p.fileName), SHARD_INDEX_FILE] : [SINGLE_CHECKPOINT_FILE];
    // The other layout's entry file would make the directory open as something else.
    await target.prepare(names, [plans.length > 1 ? SINGLE_CHECKPOINT_FILE : SHARD_INDEX_FILE]);
    const r = await writeSharded(tensors, metadata, (name) => target.create(name), { ...progress, ...(options.maxShardSize === undefined ? {} : { maxShardSize: options.maxShardSize }), ...(options.jobs === undefined ? {} : { jobs: options.jobs }) });
    await target.settle();
    return { files: r.files, bytes: r.bytes };
  },

  async validate(ctx) {
    let where;
    try {
      where = await layout(ctx);
    } catch (e) {
      return failed(e, ctx.name);
    }
    return where.index !== null ? validateSharded(ctx, where.index) : validateFile(ctx, where.file!);
  },
};

async function validateFile(ctx: Context, file: string): Promise<ValidationReport> {
  const path = ctx.path(file);
  let header;
  try {
    header = await ctx.safetensorsHeader(file);
  } catch (e) {
    return failed(e, path);
  }
  return { valid: true, errors: [], warnings: header.warnings.map((f) => withPath(f, path)), files: [path] };
}

/**
 * Every shard the index names is validated on its own (so one report lists every bad shard), then
 * the checkpoint is opened to check that index and shards agree.
 */
async function validateSharded(ctx: Context, index: string): Promise<ValidationReport> {
  const indexPath = ctx.path(index);
  let shardFiles: readonly string[];
  try {
    shardFiles = parseShardIndex(await ctx.bytes(index, DEFAULT_INDEX_LIMITS.maxBytes)).shardFiles;
  } catch (e) {
    return failed(e, indexPath);
  }
  const errors: Finding[] = [];
  const warnings: Finding[] = [];
  const files = [indexPath];
  for (const shard of shardFiles) {
    files.push(ctx.path(shard));
    if (!(await ctx.has(shard))) {
      errors.push({ code: 'ShardMissing', message: `shard ${shard} named in the index does not exist`, path: ctx.path(shard) });
      continue;
    }
    const r = await validateFile(ctx, shard);
    errors.push(...r.errors);
    warnings.push(...r.warnings);
  }
  if (errors.length === 0) {
    try {
      const checkpoint = await openShardedContext(ctx, index);
      warnings.push(...checkpoint.warnings.map((f) => named(ctx, f, indexPath)));
      await checkpoint.close();
    } catch (e) {
      const r = failed(e, indexPath);
      return { ...r, errors: r.errors.map((f) => named(ctx, f, indexPath)), warnings, files };
    }
  }
  return { valid: errors.length === 0, errors, warnings, files };
}

/** Core names shard files by their bare names (and the index by its standard name): make them message names. */
function named(ctx: Context, f: Finding, indexPath: string): Finding {
  if (f.path === undefined || f.path === SHARD_INDEX_FILE) return { ...f, path: indexPath };
  return f.path.includes('/') || f.path.includes('\\') ? f : { ...f, path: ctx.path(f.path) };
}

function withPath(f: Finding, path: string): Finding {
  return f.path === undefined ? { ...f, path } : f;
}

function failed(e: unknown, path: string): ValidationReport {
  if (!(e instanceof TensorportError)) throw e;
  return { valid: false, errors: [withPath(toFinding(e), path)], warnings: [], files: [path] };
}
