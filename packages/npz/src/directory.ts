import { TensorportError, type Context } from '@tensorport/core';

/**
 * Weight files a directory's `.npz` must be alone among: the `.npz` files themselves and
 * safetensors files (MLX's other tools write those, e.g. mlx-lm's `adapters.safetensors`). Not
 * `.bin`: a directory of Trainer output holds `training_args.bin`, which is no model.
 */
const WEIGHT_SUFFIXES: readonly string[] = ['.npz', '.safetensors'];

/** True when the directory holds a `.npz`: npz's claim on a directory no transformers layout name claimed first. */
export async function directoryHasNpz(ctx: Context): Promise<boolean> {
  return (await ctx.folder.list()).some((n) => n.endsWith('.npz'));
}

/**
 * The file a directory input is, for npz: mlx examples save one `weights.npz` beside config.json,
 * so a directory whose only weight file is one `*.npz` is that file. With more than one weight
 * file (two `.npz`, or a `.npz` beside a safetensors file no layout names) which one is the model
 * is a guess: UnknownFormat listing them, so the user names the file. Directories holding
 * model.safetensors, an index or pytorch_model.bin never get here: those sniffers come first.
 */
export async function npzOfDirectory(ctx: Context): Promise<string> {
  const names = await ctx.folder.list();
  const candidates = names.filter((n) => WEIGHT_SUFFIXES.some((s) => n.endsWith(s)));
  const npz = candidates.filter((n) => n.endsWith('.npz'));
  if (npz.length === 1 && candidates.length === 1) return npz[0]!;
  if (npz.length === 0) throw new TensorportError('UnknownFormat', `${ctx.name} is a directory without a .npz file`, { path: ctx.name });
  throw new TensorportError('UnknownFormat', `${ctx.name} holds several weight files (${candidates.join(', ')}) and no model.safetensors, index or pytorch_model.bin naming the checkpoint: give the file to read`, { path: ctx.name });
}
