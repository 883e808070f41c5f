/**
 * mlx-lm model directories on disk the library's way, for the tests that used @tensorport/mlx's
 * own Node helpers: read through openPath + readConfig (what the MLX transforms read), written by
 * writeMlxModelLayout through a FileTarget (the output policy every writer has).
 */
import { readConfig, type ConversionResult } from '@tensorport/mlx';
import type { Checkpoint, WriteResult } from '@tensorport/core';
import { writeMlxModelLayout } from '../../src/index.ts';
import { FileTarget, openPath, pathContext } from '../../src/node/index.ts';

/** A model directory (index or model.safetensors) or one file, with the config.json beside it. */
export async function openMlxModel(path: string): Promise<{ checkpoint: Checkpoint; config: Record<string, unknown> | undefined }> {
  const opened = await openPath(path);
  try {
    return { checkpoint: opened.checkpoint, config: await readConfig(opened.ctx) };
  } catch (e) {
    await opened.checkpoint.close();
    throw e;
  }
}

/** config.json of a directory (or of the directory holding a file), if present. */
export async function readModelConfig(path: string): Promise<Record<string, unknown> | undefined> {
  const ctx = await pathContext(path);
  try {
    return await readConfig(ctx);
  } finally {
    await ctx.close();
  }
}

/** Shards, index and config.json into `dir` (created if needed), all or nothing; OutputExists without force. */
export async function writeMlxModelDir(dir: string, result: Pick<ConversionResult, 'tensors' | 'metadata' | 'layers' | 'config'>, options: { force?: boolean } = {}): Promise<WriteResult> {
  const target = await FileTarget.at(`${dir}/`, { fsync: false, ...options });
  return writeMlxModelLayout({ tensors: result.tensors, metadata: result.metadata, layers: result.layers, ...(result.config ? { config: result.config } : {}) }, target);
}
