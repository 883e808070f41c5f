/**
 * Writing the result of an MLX command, all or nothing: one safetensors file, or a model directory
 * as mlx-lm writes it (shards + model.safetensors.index.json + config.json) with the input model's
 * tokenizer and other small files copied beside it. Every safetensors file written is re-read and
 * validated; on any failure the files this call wrote are removed.
 */
import { constants } from 'node:fs';
import { lstat, mkdir, open, realpath, rm, rmdir, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { TensorportError, validateSafetensors, type ErrorCode, type Finding, type TensorDescriptor } from '@tensorport/core';
import { CommitGroup, FileSink, FileSource, openCheckpointPath, sameFile, sweepOnce, writeCheckpointPath } from '@tensorport/core/node';
import { MLX_CONFIG_FILE, MLX_INDEX_FILE, planMlxShards, writeMlxModel, type ConversionResult } from '@tensorport/mlx';
import type { MlxInput } from './input.ts';
import { listFiles } from './input.ts';

/** Tokenizer, generation config, chat templates, remote code: what mlx-lm carries over. */
const COPIED = /\.(json|jsonl|txt|model|tiktoken|jinja|py)$/i;
/** Larger "small files" are skipped with a warning (the biggest tokenizer.json files are ~35 MB). */
export const MAX_COPIED_BYTES = 64 * 1024 * 1024;
/** The weight files of an mlx-lm model directory. */
const WEIGHT_FILE = /^model(-\d+-of-\d+)?\.safetensors$/;

export interface MlxWriteOptions {
  force: boolean;
  /** Quantized output: a file output must be describable by its `__metadata__` defaults alone. */
  quantized: boolean;
  onProgress?: (done: number, total: number) => void;
}

export interface MlxWriteResult {
  /** Absolute path of the output file or directory. */
  output: string;
  /** Every file written (absolute), shards and index first, then config.json and copied files. */
  files: string[];
  /** Files copied unchanged from the input model directory (names). */
  copied: string[];
  bytes: number;
  warnings: Finding[];
}

export async function writeMlxOutput(result: ConversionResult, outputArg: string, input: MlxInput, options: MlxWriteOptions): Promise<MlxWriteResult> {
  const output = resolve(outputArg);
  const info = await stat(output).catch(() => null);
  const directory = outputArg.endsWith('/') || outputArg.endsWith(sep) || info?.isDirectory() === true;
  const warnings: Finding[] = [];
  let written: string[] = [];
  let copied: string[] = [];
  let bytes = 0;
  try {
    if (!directory) {
      if (options.quantized) refuseMixed(result, outputArg);
      const r = await writeCheckpointPath(result.tensors, result.metadata, output, {
        force: options.force,
        inputs: input.files,
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      });
      written = r.paths;
      bytes = r.bytes;
    } else {
      const extras = input.modelDir ? await extraFiles(input.modelDir, warnings) : [];
      const r = await writeModelDir(result, output, input, extras, options);
      written = r.files;
      copied = extras.map((e) => e.name);
      bytes = r.bytes;
    }
    await verify(written, directory ? output : written[0]!, result.tensors);
    return { output, files: written, copied, bytes, warnings };
  } catch (e) {
    await Promise.all(written.map((f) => rm(f, { force: true }).catch(() => undefined)));
    if (directory && info === null) await rmdir(output).catch(() => undefined);
    throw e;
  }
}

/** Per-layer bits, group sizes or modes live only in config.json: a lone file would be misread later. */
function refuseMixed(result: ConversionResult, output: string): void {
  const bits = result.metadata.get('quantization_bits');
  const gs = result.metadata.get('quantization_group_size');
  // A layer of another mode counts too: the file's defaults would be applied to it when read back.
  const mode = result.metadata.get('quantization_mode') ?? 'affine';
  const odd = result.layers.find((l) => l.mode !== mode || String(l.bits) !== bits || String(l.groupSize) !== gs);
  if (odd) {
    throw new TensorportError(
      'InvalidOption',
      `layer ${odd.path} is ${odd.mode} with ${odd.bits} bits/group ${odd.groupSize}, unlike the file's defaults (${bits} bits/group ${gs}, ${mode}): write to a directory (end '${output}' with '/') so config.json records it`,
      { path: output },
    );
  }
}

interface Extra {
  name: string;
  bytes: Uint8Array;
}

/**
 * The small files to copy. Only regular files whose real path stays inside the input directory
 * (or, for a Hugging Face cache snapshot, inside that repository's `blobs/`, where the snapshot's
 * symlinks point) are copied: a symlink to a token, `/proc/self/environ`, a device or a FIFO is
 * skipped with a warning naming it. The file is opened without following links and without
 * blocking, and checked again through the open handle, so a swap after the check reads nothing.
 */
async function extraFiles(dir: string, warnings: Finding[]): Promise<Extra[]> {
  const root = await realpath(dir);
  // <cache>/models--org--name/snapshots/<revision>/file -> ../../blobs/<hash>
  const blobs = basename(dirname(root)) === 'snapshots' ? join(dirname(dirname(root)), 'blobs') : null;
  const out: Extra[] = [];
  for (const name of await listFiles(dir)) {
    if (name.startsWith('.') || !COPIED.test(name) || name === MLX_CONFIG_FILE || name.endsWith('.index.json')) continue;
    const path = join(dir, name);
    const skip = (why: string): void => {
      warnings.push({ code: 'FileNotCopied', message: `${name} not copied: ${why}`, path });
    };
    const real = await realpath(path).catch(() => null);
    if (real === null) {
      skip('it is a dangling link');
      continue;
    }
    if (!within(root, real) && !(blobs !== null && dirname(real) === blobs)) {
      skip(`it resolves to ${real}, outside the input directory`);
      continue;
    }
    const fh = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(() => null);
    if (fh === null) {
      skip(`cannot open ${real}`);
      continue;
    }
    try {
      const st = await fh.stat();
      if (!st.isFile()) {
        skip('it is not a regular file');
        continue;
      }
      if (st.size > MAX_COPIED_BYTES) {
        warnings.push({ code: 'FileNotCopied', message: `${name} is ${st.size} bytes, more than the ${MAX_COPIED_BYTES} copied; copy it yourself if the model needs it`, path });
        continue;
      }
      out.push({ name, bytes: await fh.readFile() });
    } finally {
      await fh.close();
    }
  }
  return out;
}

function within(root: string, real: string): boolean {
  const rel = relative(root, real);
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
}

async function writeModelDir(result: ConversionResult, dir: string, input: MlxInput, extras: Extra[], options: MlxWriteOptions): Promise<{ files: string[]; bytes: number }> {
  if (input.modelDir && (await sameFile(input.modelDir, dir))) {
    throw new TensorportError('SameInputOutput', `the output directory ${dir} is the input model directory; choose another`, { path: dir });
  }
  // A commit a killed run left half done is rolled back before we look for existing outputs.
  sweepOnce(dir);
  const names = [...planMlxShards(result.tensors).map((p) => p.fileName), MLX_INDEX_FILE, ...(result.config ? [MLX_CONFIG_FILE] : []), ...extras.map((e) => e.name)];
  for (const name of names) {
    const path = join(dir, name);
    for (const f of input.files) {
      if (await sameFile(f, path)) throw new TensorportError('SameInputOutput', `output ${path} would replace the input ${f}`, { path });
    }
    if (!options.force && (await lstat(path).catch(() => null))) {
      throw new TensorportError('OutputExists', `${path} already exists (use --force to replace it)`, { path });
    }
  }
  // mlx-lm loads every model*.safetensors in a directory: an old shard left beside the new ones
  // would be loaded with them.
  const stale = (await listFiles(dir).catch(() => [] as string[])).filter((f) => WEIGHT_FILE.test(f) && !names.includes(f));
  for (const f of stale) {
    for (const i of input.files) {
      if (await sameFile(i, join(dir, f))) throw new TensorportError('SameInputOutput', `writing a model into ${dir} would remove the input ${i}`, { path: i });
    }
  }
  if (stale.length > 0 && !options.force) {
    throw new TensorportError('OutputExists', `${join(dir, stale[0]!)} already exists and would be loaded with the new weights (use --force to replace the model in ${dir})`, { path: join(dir, stale[0]!) });
  }
  await mkdir(dir, { recursive: true });
  // One commit group: shards, index, config.json and the copied files appear together or not at
  // all, also when interrupted (core's commit-group.ts).
  const group = new CommitGroup();
  const sinkOptions = { force: options.force, fsync: true, group };
  const r = await writeMlxModel(result, (name) => FileSink.create(join(dir, name), sinkOptions), {
    extraFiles: extras,
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  });
  await Promise.all(stale.map((f) => rm(join(dir, f), { force: true })));
  return { files: r.files.map((f) => join(dir, f)), bytes: r.bytes };
}

/** Each safetensors file passes core's validator; reading the output back gives what was written. */
async function verify(files: readonly string[], output: string, tensors: readonly TensorDescriptor[]): Promise<void> {
  for (const file of files.filter((f) => f.endsWith('.safetensors'))) {
    const source = await FileSource.open(file);
    try {
      const first = (await validateSafetensors(source)).errors[0];
      if (first) {
        throw new TensorportError(first.code as ErrorCode, `the written file failed validation: ${first.message}`, {
          path: file,
          ...(first.tensor === undefined ? {} : { tensor: first.tensor }),
        });
      }
    } finally {
      await source.close();
    }
  }
  const back = await openCheckpointPath(output);
  try {
    const expected = new Map(tensors.map((t) => [t.name, t]));
    const same = back.tensors.length === tensors.length && back.tensors.every((t) => {
      const e = expected.get(t.name);
      return e !== undefined && e.dtype === t.dtype && e.shape.join() === t.shape.join() && e.byteLength === t.byteLength;
    });
    if (!same) throw new TensorportError('ShardMismatch', `reading ${output} back does not give the ${tensors.length} tensors that were written`, { path: output });
  } finally {
    await back.close();
  }
}
