/**
 * Node entry: model directories on disk. config.json is read beside the checkpoint (bounded: an
 * untrusted file must not make us allocate without limit) and written with the shards.
 */
import { mkdir, readFile, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { TensorportError, type Checkpoint } from '@tensorport/core';
import { CommitGroup, FileSink, openCheckpointPath } from '@tensorport/core/node';
import { MLX_CONFIG_FILE, writeMlxModel, type WriteMlxModelOptions } from '../model.ts';
import type { ConversionResult } from '../dequantize.ts';
import { rememberConfigText } from '../config.ts';

/** config.json files are a few KiB; anything past this is refused unread. */
export const MAX_CONFIG_BYTES = 16 * 1024 * 1024;

/** config.json of a model directory (or of the directory holding a checkpoint file), if present. */
export async function readModelConfig(path: string): Promise<Record<string, unknown> | undefined> {
  const st = await stat(path).catch(() => null);
  if (!st) return undefined;
  const file = st.isDirectory() ? join(path, MLX_CONFIG_FILE) : join(dirname(path), MLX_CONFIG_FILE);
  const cst = await stat(file).catch(() => null);
  if (!cst?.isFile()) return undefined;
  if (cst.size > MAX_CONFIG_BYTES) throw new TensorportError('MlxInvalidConfig', `${file} is ${cst.size} bytes, more than the ${MAX_CONFIG_BYTES} allowed`, { path: file });
  let value: unknown;
  let text: string;
  try {
    text = await readFile(file, 'utf8');
    value = JSON.parse(text);
  } catch (e) {
    throw new TensorportError('MlxInvalidConfig', `${file} is not valid JSON: ${(e as Error).message}`, { path: file, cause: e });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new TensorportError('MlxInvalidConfig', `${file} does not hold a JSON object`, { path: file });
  // written back as this text, edited (config.ts: Python's 0.0 must not become 0)
  rememberConfigText(value as Record<string, unknown>, text);
  return value as Record<string, unknown>;
}

/** A model directory (index or model.safetensors) or one file, with its config.json. */
export async function openMlxModel(path: string): Promise<{ checkpoint: Checkpoint; config: Record<string, unknown> | undefined }> {
  const config = await readModelConfig(path);
  const checkpoint = await openCheckpointPath(path);
  return { checkpoint, config };
}

export interface WriteMlxModelDirOptions extends WriteMlxModelOptions {
  /** Replace existing files (otherwise OutputExists before anything is written). */
  force?: boolean;
  fsync?: boolean;
}

/** Writes shards, model.safetensors.index.json and config.json into `dir` (created if needed). */
export async function writeMlxModelDir(dir: string, result: Pick<ConversionResult, 'tensors' | 'metadata' | 'layers' | 'config'>, options: WriteMlxModelDirOptions = {}) {
  await mkdir(dir, { recursive: true });
  // One commit group: the model's files appear together or not at all, also when interrupted.
  const sinkOptions = { force: options.force ?? false, fsync: options.fsync ?? true, group: new CommitGroup() };
  return writeMlxModel(result, (name) => FileSink.create(join(dir, name), sinkOptions), options);
}
