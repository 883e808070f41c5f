import { resolve } from 'node:path';
import { extensionOf, TensorportError, type Finding } from '@tensorport/core';
import { convert, type ConvertOptions, type ConvertReport, type WriteOptionsByFormat } from '../pipeline/convert.ts';
import { diff, type DiffReport } from '../pipeline/diff.ts';
import { inspect, type InspectOptions, type InspectReport } from '../pipeline/inspect.ts';
import type { PipelineOptions, ReadOptions } from '../pipeline/open.ts';
import { defaultRegistry, type Registry } from '../registry.ts';
import { scan, type ScanResult } from '../pipeline/scan.ts';
import { validate, type ValidateReport } from '../pipeline/validate.ts';
import type { DiffOptions } from '@tensorport/core';
import { sameFile } from '@tensorport/core/node';
import { pathContext, withPath } from './folder.ts';
import { FileTarget } from './target.ts';

/** `convert`'s options over paths: `dtype`, `transform`, `write`, `verify`, `carry`, `gguf` and `onProgress` mean what they mean there. */
export interface ConvertPathOptions extends PipelineOptions, Pick<ConvertOptions, 'dtype' | 'transform' | 'write' | 'verify' | 'carry' | 'gguf' | 'onProgress'> {
  /** A checkpoint file (format detected from its bytes), a checkpoint directory or its index file. */
  input: string;
  /** A file path, or a directory (existing, or ending with '/') that receives the format's file names. */
  output: string;
  /** Largest shard in tensor bytes, for a directory output (default 5e9, HF's "5GB"); InvalidOption for a file output. */
  maxShardSize?: number;
  /** Replace existing outputs (never the input). */
  force?: boolean;
  /** fsync outputs before renaming them into place (default true). */
  fsync?: boolean;
  /**
   * Output format by name (safetensors, torch, npz, npy, gguf); default: safetensors for a directory,
   * else the format whose extension the output has (formatForOutput: InvalidOption for any other name).
   */
  to?: string;
  /** npz output: deflate members (np.savez_compressed). */
  compress?: boolean;
  /** safetensors output: `__metadata__` entries added to (or replacing) the input's; InvalidOption for a format without metadata. */
  metadata?: Readonly<Record<string, string>>;
  /** safetensors directory output: shards written at the same time (default 1); the bytes do not depend on it. */
  jobs?: number;
}

/** `convert`'s report, with `files` as absolute paths. */
export interface ConvertPathResult extends ConvertReport {
  input: string;
  /** Absolute path of the output file or directory. */
  output: string;
}

/**
 * The format a file output's extension names, among the formats of the registry that write; a
 * directory is safetensors. Any other extension, or none, is InvalidOption naming what can be
 * written: `x.onnx` or `x.h5` silently becoming safetensors would be wrong data, and an
 * extensionless `out` is more often a directory missing its '/' than a file (docs/cli.md).
 */
export function formatForOutput(output: string, directory: boolean, registry: Registry = defaultRegistry): string {
  if (directory) return 'safetensors';
  const ext = extensionOf(output);
  const writers = registry.formats.filter((f) => f.write);
  const found = ext === '' ? undefined : writers.find((f) => f.extensions.includes(ext));
  if (found) return found.name;
  const list = writers.map((f) => `${f.name} (${f.extensions.join(', ')})`).join(', ');
  const what = ext === '' ? `'${output}' has no extension` : `tensorport cannot write '${ext}' files`;
  throw new TensorportError('InvalidOption', `${what}: it writes ${list}, or a directory (end the path with '/'); or name the format with --to (option \`to\`) to write this name anyway`, { path: output });
}

/** `convert` by paths: what `tensorport convert` runs. */
export async function convertPath(options: ConvertPathOptions): Promise<ConvertPathResult> {
  const target = await FileTarget.at(options.output, { force: options.force === true, fsync: options.fsync !== false });
  if (options.maxShardSize !== undefined) {
    if (!Number.isSafeInteger(options.maxShardSize) || options.maxShardSize <= 0) {
      throw new TensorportError('InvalidOption', `the max shard size must be a positive number of bytes, got ${options.maxShardSize}`);
    }
    if (!target.directory) {
      throw new TensorportError('InvalidOption', `a max shard size needs a directory output: end '${options.output}' with '/' to shard into it`, { path: options.output });
    }
  }
  const to = options.to ?? formatForOutput(options.output, target.directory, options.registry);
  if (options.metadata !== undefined && to !== 'safetensors') {
    throw new TensorportError('InvalidOption', `metadata entries need a safetensors output (they go into its __metadata__): a ${to} output has no such field`, { path: options.output });
  }
  const write: WriteOptionsByFormat = {
    ...options.write,
    safetensors: {
      ...options.write?.safetensors,
      ...(options.maxShardSize === undefined ? {} : { maxShardSize: options.maxShardSize }),
      ...(options.metadata === undefined ? {} : { metadata: { ...options.write?.safetensors?.metadata, ...options.metadata } }),
      ...(options.jobs === undefined ? {} : { jobs: options.jobs }),
    },
    npz: { ...options.write?.npz, ...(options.compress ? { compress: true } : {}) },
  };
  // Written into the input directory itself, its side files are already there.
  const carry = options.carry !== false && !(await sameFile(options.input, options.output));
  return withPath(options.input, async (input) => {
    const r = await convert({
      input,
      target,
      to,
      write,
      ...(options.dtype === undefined ? {} : { dtype: options.dtype }),
      ...(options.transform ? { transform: options.transform } : {}),
      ...(options.registry ? { registry: options.registry } : {}),
      ...(options.read ? { read: options.read } : {}),
      ...(options.verify ? { verify: true } : {}),
      ...(carry ? {} : { carry: false }),
      ...(options.gguf ? { gguf: options.gguf } : {}),
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    });
    return { input: options.input, output: resolve(options.output), ...r };
  });
}

/** `inspect` by path. */
export function inspectPath(path: string, options: InspectOptions = {}): Promise<InspectReport> {
  return withPath(path, (ctx) => inspect(ctx, options));
}

/** `validate` by path: an unreadable path is a report too, never an exception. */
export async function validatePath(path: string, options: PipelineOptions = {}): Promise<ValidateReport> {
  let ctx;
  try {
    ctx = await pathContext(path);
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
    return { path, format: null, valid: false, errors: [{ ...e.toJSON(), path } as unknown as Finding], warnings: [], files: [path] };
  }
  try {
    return await validate(ctx, options);
  } finally {
    await ctx.close();
  }
}

/** `diff` by paths. */
export function diffPaths(a: string, b: string, options: DiffOptions & PipelineOptions = {}): Promise<DiffReport> {
  return withPath(a, (ca) => withPath(b, (cb) => diff(ca, cb, options)));
}

/** `scan` by path (a file). */
export function scanPath(path: string): Promise<ScanResult> {
  return withPath(path, async (ctx) => {
    if (ctx.entry === null) throw new TensorportError('IoError', `${path} is a directory: scan one file`, { path });
    return scan(ctx);
  });
}

export type { ReadOptions };
