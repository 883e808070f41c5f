/**
 * The files a model directory carries besides its weights: config.json, generation_config.json,
 * the tokenizer (tokenizer.json, tokenizer_config.json, special_tokens_map.json, tokenizer.model,
 * vocab/merges files, *.tiktoken), chat templates, remote code and the model card (README.md: its
 * front matter holds the license and base model the Hub shows). `convert DIR out/` and the MLX
 * commands copy the same set, so `from_pretrained(out/)` and mlx_lm.load(out/) find what they need
 * (mlx-lm's own convert copies these patterns too).
 *
 * Only a directory input carries them: a file, an index file included, is converted alone (its
 * folder may hold other things: a download directory, test fixtures' manifests).
 */
import { TensorportError, type Context, type Finding, type Folder } from '@tensorport/core';

/** Tokenizer, configs, chat templates, remote code. Weights never match (their extensions differ). */
const CARRIED = /\.(json|jsonl|txt|model|tiktoken|jinja|py)$/i;

/** Larger "small files" are skipped with a warning (the biggest tokenizer.json files are ~35 MB). */
export const MAX_CARRIED_BYTES = 64 * 1024 * 1024;

export interface CarriedFile {
  readonly name: string;
  readonly bytes: Uint8Array;
}

/** A file read for carrying, or why it was not (a link out of the directory, not a regular file, too big). */
export type CarryRead = { bytes: Uint8Array } | { skipped: string };

/**
 * A folder that reads carried files by its own rules (Node: no link out of the directory, no FIFO
 * or device, checked through the open handle). Other folders are read by name, size-capped.
 */
export interface CarryingFolder extends Folder {
  /** Every entry's name, not only regular files: a FIFO or device among the side files is named in a warning. */
  entries(): Promise<readonly string[]>;
  carry(name: string, maxBytes: number): Promise<CarryRead>;
}

function carries(folder: Folder): folder is CarryingFolder {
  return typeof (folder as Partial<CarryingFolder>).carry === 'function';
}

/** The model card: only this name of the markdown files (notes, changelogs stay behind). */
const MODEL_CARD = /^readme\.md$/i;

/** True for a name the model directory carries: not hidden, not an index (it describes the input's shards). */
export function isCarriedFile(name: string): boolean {
  return !name.startsWith('.') && (CARRIED.test(name) || MODEL_CARD.test(name)) && !name.endsWith('.index.json');
}

/** True when the input is a model directory, whose side files go with it. */
export function carriesModelFiles(ctx: Context): boolean {
  return ctx.entry === null;
}

/**
 * The input model directory's side files, read whole (each at most MAX_CARRIED_BYTES); every file
 * left out gets a FileNotCopied warning naming it and why. `except` names files the output writes
 * itself (an edited config.json).
 */
export async function carriedFiles(ctx: Context, warnings: Finding[], except: ReadonlySet<string> = new Set()): Promise<CarriedFile[]> {
  if (!carriesModelFiles(ctx)) return [];
  const folder = ctx.folder;
  const out: CarriedFile[] = [];
  for (const name of carries(folder) ? await folder.entries() : await folder.list()) {
    if (!isCarriedFile(name) || except.has(name)) continue;
    const read = carries(folder) ? await folder.carry(name, MAX_CARRIED_BYTES) : await readCapped(folder, name);
    if ('skipped' in read) warnings.push({ code: 'FileNotCopied', message: `${name} not copied: ${read.skipped}`, path: folder.path(name) });
    else out.push({ name, bytes: read.bytes });
  }
  return out;
}

/** Why an oversized file is left out, in every folder's reader. */
export function tooBig(size: number, max = MAX_CARRIED_BYTES): string {
  return `it is ${size} bytes, more than the ${max} copied; copy it yourself if the model needs it`;
}

async function readCapped(folder: Folder, name: string): Promise<CarryRead> {
  const size = await folder.size(name);
  if (size === null) return { skipped: 'it is not a regular file' };
  if (size > MAX_CARRIED_BYTES) return { skipped: tooBig(size) };
  const source = await folder.open(name);
  try {
    return { bytes: await source.read(0, Math.min(source.size, MAX_CARRIED_BYTES)) };
  } finally {
    await source.close();
  }
}

/**
 * Weight files of an older write that a loader would read with the new ones: model.safetensors,
 * shards (`model-00001-of-00004.safetensors`, any prefix: diffusers, PEFT) and indexes (mlx-lm
 * loads every model*.safetensors of a directory; transformers an index, else model.safetensors).
 * Only these names: a `model_ema.safetensors` beside them is someone's file, never removed.
 */
const WEIGHT_FILE = /^model\.safetensors$|-\d+-of-\d+\.safetensors$|\.safetensors\.index\.json$/;

/**
 * The entries of an output directory (`present`) that a write of `files` leaves but a loader would
 * read with it: the other layout's entry file (`shadows`, e.g. model.safetensors beside a new
 * index) and old weight files this write does not replace. Sorted. Every target (FileTarget,
 * HandleTarget) refuses them without force and removes them with it.
 */
export function leftoverWeightFiles(present: readonly string[], files: readonly string[], shadows: readonly string[] = []): string[] {
  const planned = new Set(files);
  const shadowing = shadows.filter((s) => present.includes(s) && !planned.has(s));
  const stale = present.filter((n) => WEIGHT_FILE.test(n) && !planned.has(n) && !shadowing.includes(n));
  return [...shadowing, ...stale].sort();
}

/** The refusal of leftovers without force; `first` is where the first one is (its path). */
export function leftoversExist(first: string, leftovers: readonly string[]): TensorportError {
  const others = leftovers.length > 1 ? ` (so do ${leftovers.slice(1).join(', ')})` : '';
  return new TensorportError('OutputExists', `${first} already exists and would be loaded with the new weights${others}: use --force to remove them with this write`, { path: first });
}
