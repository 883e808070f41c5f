import { readFile, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import {
  DEFAULT_INDEX_LIMITS,
  SHARD_INDEX_FILE,
  SINGLE_CHECKPOINT_FILE,
  TensorportError,
  parseShardIndex,
  toFinding,
  validateSafetensors,
  type Finding,
} from '@tensorport/core';
import { FileSource, openCheckpointPath, writeCheckpointPath } from '@tensorport/core/node';
import type { FormatHandler, Probe, ValidationReport } from './registry.ts';

const INDEX_SUFFIX = '.safetensors.index.json';

/** safetensors: one file, or a directory / index file with shards (transformers' layout). */
export const safetensorsFormat: FormatHandler = {
  name: 'safetensors',
  extensions: ['.safetensors'],

  detect(p: Probe): boolean {
    if (p.isDirectory) return p.entries.includes(SHARD_INDEX_FILE) || p.entries.includes(SINGLE_CHECKPOINT_FILE);
    return p.content === 'safetensors' || (p.content === 'json' && p.path.endsWith(INDEX_SUFFIX));
  },

  open: (path) => openCheckpointPath(path),

  async write(tensors, metadata, outPath, options) {
    const result = await writeCheckpointPath(tensors, metadata, outPath, {
      force: options.force,
      fsync: options.fsync !== false,
      inputs: options.inputs,
      ...(options.maxShardSize === undefined ? {} : { maxShardSize: options.maxShardSize }),
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    });
    return { files: result.paths, bytes: result.bytes };
  },

  async validate(path) {
    const info = await stat(path).catch(() => null);
    if (info?.isDirectory()) {
      const index = join(path, SHARD_INDEX_FILE);
      if (await stat(index).then(() => true, () => false)) return validateSharded(index, path);
      return validateFile(join(path, SINGLE_CHECKPOINT_FILE));
    }
    return path.endsWith('.index.json') ? validateSharded(path, path) : validateFile(path);
  },
};

async function validateFile(path: string): Promise<ValidationReport> {
  let source: FileSource;
  try {
    source = await FileSource.open(path);
  } catch (e) {
    return failed(e, path);
  }
  try {
    const r = await validateSafetensors(source);
    return { valid: r.valid, errors: r.errors.map((f) => withPath(f, path)), warnings: r.warnings.map((f) => withPath(f, path)), files: [path] };
  } finally {
    await source.close();
  }
}

/**
 * A sharded checkpoint: every shard the index names is validated on its own (so one report lists
 * every bad shard), then the checkpoint is opened to check that index and shards agree.
 */
async function validateSharded(indexPath: string, path: string): Promise<ValidationReport> {
  const dir = dirname(indexPath);
  let shardFiles: readonly string[];
  const warnings: Finding[] = [];
  try {
    const size = (await stat(indexPath)).size;
    if (size > DEFAULT_INDEX_LIMITS.maxBytes) {
      throw new TensorportError('InvalidIndex', `${indexPath} is ${size} bytes, more than the ${DEFAULT_INDEX_LIMITS.maxBytes} allowed`, { path: indexPath });
    }
    const index = parseShardIndex(await readFile(indexPath));
    shardFiles = index.shardFiles;
  } catch (e) {
    return failed(e, indexPath);
  }
  const errors: Finding[] = [];
  const files = [indexPath];
  for (const shard of shardFiles) {
    const shardPath = join(dir, shard);
    files.push(shardPath);
    if (!(await stat(shardPath).then((s) => s.isFile(), () => false))) {
      errors.push({ code: 'ShardMissing', message: `shard ${shard} named in the index does not exist`, path: shardPath });
      continue;
    }
    const r = await validateFile(shardPath);
    errors.push(...r.errors);
    warnings.push(...r.warnings);
  }
  if (errors.length === 0) {
    try {
      const checkpoint = await openCheckpointPath(path);
      // Core names files relative to the index; report them as paths.
      if ('warnings' in checkpoint) warnings.push(...checkpoint.warnings.map((f) => inDir(f, dir, indexPath)));
      await checkpoint.close();
    } catch (e) {
      const r = failed(e, indexPath);
      return { ...r, errors: r.errors.map((f) => inDir(f, dir, indexPath)), warnings, files };
    }
  }
  return { valid: errors.length === 0, errors, warnings, files };
}

/** Core names shard files relative to the index (and the index by its bare name): make them paths. */
function inDir(f: Finding, dir: string, indexPath: string): Finding {
  if (f.path === undefined || f.path === SHARD_INDEX_FILE) return { ...f, path: indexPath };
  return f.path.includes('/') ? f : { ...f, path: join(dir, f.path) };
}

function withPath(f: Finding, path: string): Finding {
  return f.path === undefined ? { ...f, path } : f;
}

function failed(e: unknown, path: string): ValidationReport {
  if (!(e instanceof TensorportError)) throw e;
  return { valid: false, errors: [withPath(toFinding(e), path)], warnings: [], files: [path] };
}
