/**
 * Opening the input of an MLX command: a safetensors file, a sharded or single-file model
 * directory, or an MLX `.npz` (mlx's `mx.savez`, BF16 stored as `<V2`), with the model's
 * config.json when there is one beside it.
 */
import { readdir, stat } from 'node:fs/promises';
import { extname, join, resolve } from 'node:path';
import { TensorportError, type Checkpoint, type Finding } from '@tensorport/core';
import { FileSource, nodeZlibCodec } from '@tensorport/core/node';
import { readModelConfig } from '@tensorport/mlx/node';
import { openNpz } from '@tensorport/npz';
import { detectFormat } from '../formats/registry.ts';
import { detectInput, probe } from '../probe.ts';

export interface MlxInput {
  checkpoint: Checkpoint;
  config: Record<string, unknown> | undefined;
  /** The directory the model lives in when the input is one (its other files may be copied). */
  modelDir: string | null;
  /** Every file the tensors are read from, plus the input path itself (outputs must differ). */
  files: string[];
  warnings: Finding[];
}

export async function openMlxInput(path: string): Promise<MlxInput> {
  const p = await probe(path);
  const modelDir = p.isDirectory ? resolve(path) : null;
  const warnings: Finding[] = [];
  let checkpoint: Checkpoint;
  const handler = await detectFormat(p);
  if (handler) {
    checkpoint = await handler.open(path);
  } else if (!p.isDirectory && p.content === 'zip' && extname(path).toLowerCase() === '.npz') {
    checkpoint = await openNpzFile(path);
  } else if (p.isDirectory && p.entries.filter((e) => e.endsWith('.npz')).length === 1) {
    // mlx examples save `weights.npz` beside config.json.
    checkpoint = await openNpzFile(join(path, p.entries.find((e) => e.endsWith('.npz'))!));
  } else {
    // The registry's own message for what it cannot read.
    const { format } = await detectInput(path);
    checkpoint = await format.open(path);
  }
  // NpyV2AsBF16 is how MLX stores every BF16 array: expected here, not worth a warning each.
  if ('warnings' in checkpoint && Array.isArray(checkpoint.warnings)) warnings.push(...(checkpoint.warnings as Finding[]).filter((w) => w.code !== 'NpyV2AsBF16'));
  try {
    const config = await readModelConfig(path);
    const files = new Set([resolve(path)]);
    for (const t of checkpoint.tensors) if (t.range) files.add(resolve(t.range.source.name));
    return { checkpoint, config, modelDir, files: [...files], warnings };
  } catch (e) {
    await checkpoint.close();
    throw e;
  }
}

async function openNpzFile(path: string): Promise<Checkpoint> {
  const source = await FileSource.open(path);
  try {
    return await openNpz(source, { codec: nodeZlibCodec });
  } catch (e) {
    await source.close();
    throw e;
  }
}

/** True when `path` is an existing directory. */
export async function isDirectory(path: string): Promise<boolean> {
  return (await stat(path).catch(() => null))?.isDirectory() === true;
}

export async function listFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).sort();
}

export function refuse(code: 'SameInputOutput' | 'OutputExists', message: string, path: string): never {
  throw new TensorportError(code, message, { path });
}
