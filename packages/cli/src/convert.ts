import { rm, rmdir, stat } from 'node:fs/promises';
import { extname, resolve, sep } from 'node:path';
import { TensorportError, castTensors, isCastable, type CastTarget, type ErrorCode, type Finding, type TensorDescriptor } from '@tensorport/core';
import { formatByName, type FormatHandler, type OpenOptions } from './formats/registry.ts';
import { detectInput } from './probe.ts';
import { verifyContent } from './verify.ts';

export type TargetDtype = CastTarget;

export interface ConvertOptions {
  /** A checkpoint file (format detected from its bytes), a sharded checkpoint directory or its index file. */
  input: string;
  /** A file path, or a directory (existing, or ending with '/') that receives model.safetensors or shards + index. */
  output: string;
  /** Cast F16/BF16/F32/F64 tensors to this dtype; other dtypes are kept (and named in `warnings`). */
  dtype?: TargetDtype | Lowercase<TargetDtype>;
  /** Largest shard in tensor bytes, for a directory output (default 5e9, HF's "5GB"); InvalidOption for a file output. */
  maxShardSize?: number;
  /** Replace existing outputs (never the input). */
  force?: boolean;
  /** fsync outputs before renaming them into place (default true). */
  fsync?: boolean;
  /** Output format (safetensors, npz, npy, torch); default from the output's extension, else safetensors. */
  to?: string;
  /** npz output: deflate members (np.savez_compressed). */
  compress?: boolean;
  /** Reader options: `void1` (npz/npy), `select` and `keepAliases` (torch), `name` (npy). */
  read?: OpenOptions;
  /** Re-read the written output and diff it bit for bit against the input (default false: it costs ~+120% of the conversion time; docs/cli.md). */
  verify?: boolean;
  onProgress?: (done: number, total: number) => void;
}

export interface ConvertResult {
  input: string;
  /** Absolute path of the output file or directory. */
  output: string;
  from: string;
  to: string;
  /** Every file written (absolute paths); each was re-read and validated. */
  files: string[];
  tensors: number;
  /** Bytes written, all files together. */
  bytes: number;
  /** Tensors whose dtype the cast changed. */
  cast: number;
  /** True when the output was re-read and diffed equal to the input (`verify`). */
  verified: boolean;
  warnings: Finding[];
}

const CAST_TARGETS: readonly string[] = ['F16', 'BF16', 'F32'];

/**
 * Converts one checkpoint, all or nothing: existing outputs are refused without `force`, an input
 * is never overwritten, every written file is re-read and validated, and when anything fails the
 * files this call wrote are removed.
 */
export async function convert(options: ConvertOptions): Promise<ConvertResult> {
  const dtype = options.dtype?.toUpperCase() as CastTarget | undefined;
  if (dtype !== undefined && !CAST_TARGETS.includes(dtype)) {
    throw new TensorportError('InvalidOption', `cannot cast to ${options.dtype}: the targets are f16, bf16 and f32`);
  }
  const output = resolve(options.output);
  const outputInfo = await stat(output).catch(() => null);
  const directory = options.output.endsWith('/') || options.output.endsWith(sep) || outputInfo?.isDirectory() === true;
  if (options.maxShardSize !== undefined) {
    if (!Number.isSafeInteger(options.maxShardSize) || options.maxShardSize <= 0) {
      throw new TensorportError('InvalidOption', `the max shard size must be a positive number of bytes, got ${options.maxShardSize}`);
    }
    if (!directory) {
      throw new TensorportError('InvalidOption', `a max shard size needs a directory output: end '${options.output}' with '/' to shard into it`, { path: options.output });
    }
  }
  const to = options.to ?? formatForOutput(options.output);
  const writer = formatByName(to);
  if (!writer?.write) throw new TensorportError('UnsupportedFormat', `tensorport cannot write ${to} yet`);

  const { format: reader, warnings } = await detectInput(options.input);
  const checkpoint = await reader.open(options.input, options.read);
  let written: string[] = [];
  try {
    const tensors = dtype === undefined ? [...checkpoint.tensors] : castTensors(checkpoint.tensors, dtype);
    const cast = dtype === undefined ? 0 : checkpoint.tensors.filter((t) => t.dtype !== dtype && isCastable(t.dtype)).length;
    if (dtype !== undefined) warnings.push(...keptDtypes(checkpoint.tensors, dtype));
    const result = await writer.write(tensors, checkpoint.metadata, options.output, {
      force: options.force === true,
      fsync: options.fsync !== false,
      ...(options.compress ? { compress: true } : {}),
      inputs: inputFiles(options.input, checkpoint.tensors),
      ...(options.maxShardSize === undefined ? {} : { maxShardSize: options.maxShardSize }),
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    });
    written = result.files;
    const writtenPath = directory && written.length > 1 ? output : written[0]!;
    await verifyWritten(writer, writtenPath, tensors);
    const verified = options.verify === true;
    if (verified) await verifyContent(writer, writtenPath, tensors, readBackOptions(tensors));
    return { input: options.input, output, from: checkpoint.format, to: writer.name, files: written, tensors: tensors.length, bytes: result.bytes, cast, verified, warnings };
  } catch (e) {
    // The writer leaves nothing behind when it fails; this removes what it committed before a
    // later step (validation) failed, and the directory if this call created it.
    await Promise.all(written.map((f) => rm(f, { force: true }).catch(() => undefined)));
    if (directory && outputInfo === null) await rmdir(output).catch(() => undefined);
    throw e;
  } finally {
    await checkpoint.close();
  }
}

/** The output format an extension names; anything else (a directory, .safetensors, no extension) is safetensors. */
function formatForOutput(output: string): string {
  const ext = extname(output).toLowerCase();
  if (ext === '.npz' || ext === '.npy') return ext.slice(1);
  if (['.pt', '.pth', '.bin', '.ckpt'].includes(ext)) return 'torch';
  return 'safetensors';
}

/** One warning naming the dtypes a cast leaves alone (integers, BOOL, quantized F8/F6/F4, C64). */
function keptDtypes(tensors: readonly TensorDescriptor[], dtype: CastTarget): Finding[] {
  const kept = new Map<string, number>();
  for (const t of tensors) if (t.dtype !== dtype && !isCastable(t.dtype)) kept.set(t.dtype, (kept.get(t.dtype) ?? 0) + 1);
  if (kept.size === 0) return [];
  const list = [...kept].map(([d, n]) => `${n} ${d}`).join(', ');
  return [{ code: 'CastSkipped', message: `kept ${list} tensor(s) unchanged: a cast converts only F16, BF16, F32 and F64` }];
}

/** What the conversion reads: the input path and every file its tensors point into (the shards). */
function inputFiles(input: string, tensors: readonly TensorDescriptor[]): string[] {
  const files = new Set<string>([resolve(input)]);
  for (const t of tensors) if (t.range) files.add(resolve(t.range.source.name));
  return [...files];
}

/**
 * How to read an output back as what was written. A .npy holds no name: a one-tensor output is read
 * under the name it was written from. NumPy has no float8 descr: one-byte floats other than
 * E5M2 go out as `<V1`, read back as the one such dtype written (two cannot be told apart).
 */
function readBackOptions(tensors: readonly TensorDescriptor[]): OpenOptions {
  const void1 = new Set(tensors.filter((t) => t.dtype.startsWith('F8_') && t.dtype !== 'F8_E5M2').map((t) => t.dtype));
  return {
    ...(tensors.length === 1 ? { name: tensors[0]!.name } : {}),
    ...(void1.size === 1 ? { void1: [...void1][0]! } : {}),
  };
}

/**
 * Re-reads what was written: the output (the file, or the directory: index and every shard) must
 * pass the format's validator, and opening it must give the tensor names, dtypes and shapes that
 * were written.
 */
async function verifyWritten(writer: FormatHandler, output: string, tensors: readonly TensorDescriptor[]): Promise<void> {
  const readBack = readBackOptions(tensors);
  const first = writer.validate ? (await writer.validate(output, readBack)).errors[0] : undefined;
  if (first) {
    throw new TensorportError(first.code as ErrorCode, `the written output failed validation: ${first.message}`, {
      path: first.path ?? output,
      ...(first.tensor === undefined ? {} : { tensor: first.tensor }),
      ...(first.offset === undefined ? {} : { offset: Number(first.offset) }),
    });
  }
  const back = await writer.open(output, readBack);
  try {
    const expected = new Map(tensors.map((t) => [t.name, t]));
    const differs = (t: TensorDescriptor): boolean => {
      const e = expected.get(t.name);
      return !e || e.dtype !== t.dtype || e.byteLength !== t.byteLength || e.shape.join() !== t.shape.join();
    };
    if (back.tensors.length !== tensors.length || back.tensors.some(differs)) {
      throw new TensorportError('ShardMismatch', `reading ${output} back does not give the ${tensors.length} tensors that were written`, { path: output });
    }
  } finally {
    await back.close();
  }
}
