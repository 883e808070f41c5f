/**
 * Opening the input of an MLX command: a safetensors file, a sharded or single-file model
 * directory, or an MLX `.npz` (mlx's `mx.savez`, BF16 stored as `<V2`), with the model's
 * config.json when there is one beside it.
 */
import { readdir, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { detectFormat, extensionOf, FolderContext, TensorportError, type Checkpoint, type Context, type Finding } from '@tensorport/core';
import { readConfig } from '@tensorport/mlx';
import { npzFormat } from '@tensorport/npz';
import { defaultRegistry } from 'tensorport';
import { pathContext } from '../probe.ts';

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
  const ctx = await pathContext(path);
  let checkpoint: Checkpoint | null = null;
  try {
    checkpoint = await openIn(ctx);
    const warnings: Finding[] = [];
    // NpyV2AsBF16 is how MLX stores every BF16 array: expected here, not worth a warning each.
    if ('warnings' in checkpoint && Array.isArray(checkpoint.warnings)) warnings.push(...(checkpoint.warnings as Finding[]).filter((w) => w.code !== 'NpyV2AsBF16'));
    const config = await readConfig(ctx);
    const files = new Set([resolve(path)]);
    for (const t of checkpoint.tensors) if (t.range) files.add(resolve(t.range.source.name));
    const inner = checkpoint;
    const closing: Checkpoint = Object.assign(Object.create(inner) as Checkpoint, {
      close: async () => {
        await inner.close();
        await ctx.close();
      },
    });
    return { checkpoint: closing, config, modelDir: ctx.entry === null ? resolve(path) : null, files: [...files], warnings };
  } catch (e) {
    await checkpoint?.close();
    await ctx.close();
    throw e;
  }
}

/** The registry's formats; besides them an MLX `.npz` whatever its members, or the one `weights.npz` of a model directory. */
async function openIn(ctx: Context): Promise<Checkpoint> {
  const format = await defaultRegistry.sniff(ctx);
  if (format) return format.open(ctx);
  if (ctx.entry !== null && extensionOf(ctx.entry) === '.npz' && detectFormat(await ctx.head(), await ctx.size()) === 'zip') return npzFormat.open(ctx);
  if (ctx.entry === null) {
    const npz = (await ctx.folder.list()).filter((e) => e.endsWith('.npz'));
    // mlx examples save `weights.npz` beside config.json.
    if (npz.length === 1) {
      const sub = new FolderContext(ctx.folder, npz[0]!, ctx.codec ? { codec: ctx.codec } : {});
      const inner = await npzFormat.open(sub).catch(async (e: unknown) => {
        await sub.close();
        throw e;
      });
      return Object.assign(Object.create(inner) as Checkpoint, { close: () => inner.close().finally(() => sub.close()) });
    }
  }
  // The registry's own message for what it cannot read.
  const { format: detected } = await defaultRegistry.detect(ctx);
  return detected.open(ctx);
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
