import { lstat, mkdir, readFile, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { TensorportError } from '../errors.ts';
import { DEFAULT_INDEX_LIMITS, SHARD_INDEX_FILE, SINGLE_CHECKPOINT_FILE } from '../safetensors/index-file.ts';
import { openSafetensors, type SafetensorsFile } from '../safetensors/reader.ts';
import { openShardedCheckpoint, planShards, writeSharded, type ShardedCheckpoint, type ShardedOpenOptions, type WriteShardedOptions, type WriteShardedResult } from '../safetensors/sharded.ts';
import { writeSafetensors, type MetadataInput, type WriteOptions } from '../safetensors/writer.ts';
import type { TensorDescriptor } from '../tensor.ts';
import { CommitGroup } from './commit-group.ts';
import { FileSink } from './file-sink.ts';
import { sweepOnce } from './stale.ts';
import { errnoCode, FileSource, ioError } from './file-source.ts';

/**
 * True when both paths name the same file (device and inode, so also through symlinks, hard links
 * and different spellings). A path that does not exist is the same as nothing.
 */
export async function sameFile(a: string, b: string): Promise<boolean> {
  const [x, y] = await Promise.all([statOrNull(a), statOrNull(b)]);
  return x !== null && y !== null && x.dev === y.dev && x.ino === y.ino;
}

/**
 * Opens a safetensors checkpoint by path:
 * - a `*.index.json` file: the sharded checkpoint it describes (shards beside it);
 * - any other file: one safetensors file;
 * - a directory: its `model.safetensors.index.json` if present, else its `model.safetensors`.
 */
export async function openCheckpointPath(path: string, opts: ShardedOpenOptions = {}): Promise<SafetensorsFile | ShardedCheckpoint> {
  const st = await statOrNull(path);
  if (!st) throw new TensorportError('IoError', `${path} does not exist`, { path });
  if (st.isDirectory()) {
    const index = join(path, SHARD_INDEX_FILE);
    if (await statOrNull(index)) return openIndexPath(index, opts);
    const single = join(path, SINGLE_CHECKPOINT_FILE);
    if (await statOrNull(single)) return openFilePath(single);
    throw new TensorportError('UnknownFormat', `${path} is a directory without ${SHARD_INDEX_FILE} or ${SINGLE_CHECKPOINT_FILE}`, { path });
  }
  return path.endsWith('.index.json') ? openIndexPath(path, opts) : openFilePath(path);
}

async function openFilePath(path: string): Promise<SafetensorsFile> {
  const source = await FileSource.open(path);
  try {
    return await openSafetensors(source);
  } catch (e) {
    await source.close();
    throw e;
  }
}

async function openIndexPath(path: string, opts: ShardedOpenOptions): Promise<ShardedCheckpoint> {
  const maxBytes = opts.limits?.maxBytes ?? DEFAULT_INDEX_LIMITS.maxBytes;
  const st = await stat(path);
  // Checked before reading: the index is untrusted and readFile would allocate all of it.
  if (st.size > maxBytes) throw new TensorportError('InvalidIndex', `${path} is ${st.size} bytes, more than the ${maxBytes} allowed`, { path });
  let bytes: Uint8Array;
  try {
    bytes = await readFile(path);
  } catch (e) {
    throw ioError(`cannot read ${path}`, path, e);
  }
  const dir = dirname(path);
  return openShardedCheckpoint(bytes, async (file) => {
    try {
      return await FileSource.open(join(dir, file));
    } catch (e) {
      if (errnoCode(e) === 'ENOENT') throw new TensorportError('ShardMissing', `shard ${file} named in ${basename(path)} does not exist in ${dir}`, { path: join(dir, file), cause: e });
      throw e;
    }
  }, opts);
}

export interface WriteCheckpointOptions extends WriteOptions, Pick<WriteShardedOptions, 'jobs'> {
  /** Replace existing output files. */
  force?: boolean;
  /** Directory outputs only: shard above this many tensor bytes (default 5·10^9, HF's "5GB"). */
  maxShardSize?: number;
  /** fsync before publishing (default true). */
  fsync?: boolean;
  /** Paths being read (files, or directories read through their checkpoint files): SameInputOutput if an output would replace one. */
  inputs?: readonly string[];
}

export interface WriteCheckpointResult extends WriteShardedResult {
  /** Absolute paths of the files written. */
  paths: string[];
}

/**
 * Writes tensors to `output`:
 * - an existing directory, or a path ending in a separator (created if needed): `model.safetensors`,
 *   or shards + `model.safetensors.index.json` above `maxShardSize`;
 * - anything else: one safetensors file at exactly that path (never sharded).
 *
 * Existing files are refused (OutputExists) before any data is written, unless `force`. With
 * `force` in a directory, the other layout's entry file (a stale index when writing one file, a
 * stale model.safetensors when writing shards) is removed after the commit, so the directory opens
 * as what was just written; stale shards of an older, larger split are left alone.
 */
export async function writeCheckpointPath(
  tensors: readonly TensorDescriptor[],
  metadata: MetadataInput,
  output: string,
  opts: WriteCheckpointOptions = {},
): Promise<WriteCheckpointResult> {
  const sinkOpts = { force: opts.force ?? false, fsync: opts.fsync ?? true };
  const target = resolve(output);
  const isDir = output.endsWith('/') || output.endsWith(sep) || (await statOrNull(target))?.isDirectory() === true;
  if (!isDir) {
    await refuseInputs(opts.inputs ?? [], dirname(target), [target]);
    const sink = await FileSink.create(target, sinkOpts);
    const { bytes } = await writeSafetensors(tensors, metadata, sink, opts);
    return { files: [basename(target)], paths: [target], index: null, bytes };
  }
  const plans = planShards(tensors, opts.maxShardSize);
  const names = plans.length > 1 ? [...plans.map((p) => p.fileName), SHARD_INDEX_FILE] : [SINGLE_CHECKPOINT_FILE];
  const stale = join(target, plans.length > 1 ? SINGLE_CHECKPOINT_FILE : SHARD_INDEX_FILE);
  // A commit a killed run left half done is rolled back before we look for existing outputs.
  sweepOnce(target);
  await refuseInputs(opts.inputs ?? [], target, names.map((n) => join(target, n)));
  if (!sinkOpts.force) {
    for (const p of [...names.map((n) => join(target, n)), stale]) {
      if (await lstatOrNull(p)) throw new TensorportError('OutputExists', `${p} already exists (use --force to replace it)`, { path: p });
    }
  }
  await mkdir(target, { recursive: true }).catch((e: unknown) => {
    throw ioError(`cannot create directory ${target}`, target, e);
  });
  const group = new CommitGroup();
  const result = await writeSharded(tensors, metadata, (name) => FileSink.create(join(target, name), { ...sinkOpts, group }), opts);
  await unlink(stale).catch(() => {});
  return { ...result, paths: result.files.map((f) => join(target, f)) };
}

/**
 * SameInputOutput when an output file is an input file (same device and inode), or when an input is
 * a directory and an output would replace a file already in it (a directory is read through the
 * checkpoint files it holds, so those are inputs too). Checked before anything is written.
 */
async function refuseInputs(inputs: readonly string[], outDir: string, outFiles: readonly string[]): Promise<void> {
  for (const input of inputs) {
    const st = await statOrNull(input);
    if (!st) continue;
    for (const out of outFiles) {
      const clash = st.isDirectory() ? (await sameFile(input, outDir)) && (await statOrNull(out)) !== null : await sameFile(input, out);
      if (clash) throw new TensorportError('SameInputOutput', `output ${out} would replace the input ${input}`, { path: out });
    }
  }
}

async function statOrNull(path: string): Promise<Awaited<ReturnType<typeof stat>> | null> {
  try {
    return await stat(path, { bigint: true });
  } catch (e) {
    if (['ENOENT', 'ENOTDIR'].includes(errnoCode(e) ?? '')) return null;
    throw ioError(`cannot stat ${path}`, path, e);
  }
}

async function lstatOrNull(path: string): Promise<unknown> {
  try {
    return await lstat(path);
  } catch (e) {
    if (errnoCode(e) === 'ENOENT') return null;
    throw ioError(`cannot check ${path}`, path, e);
  }
}
