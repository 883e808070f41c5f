/** Option parsers and output shared by the MLX commands (quantize, dequantize, repack). */
import { InvalidArgumentError, Option } from 'commander';
import { isAbsolute, relative } from 'node:path';
import { AFFINE_BITS, AFFINE_GROUP_SIZES, type AffineVariant, type FloatDType } from '@tensorport/mlx';
import type { MlxCommandResult } from '../mlx/commands.ts';
import { OUTPUT_FORMAT_NAMES, parseOutputFormat } from '../options.ts';
import { ProgressBar, type ProgressStream } from '../progress.ts';
import { describeFinding, escapeTerminal } from '../report.ts';
import { formatBytes } from '../size.ts';

export interface CommandIO {
  stdout: { write(text: string): unknown };
  stderr: ProgressStream;
}

function choice(list: readonly number[], what: string): (value: string) => number {
  return (value) => {
    const n = /^\d+$/.test(value) ? Number(value) : NaN;
    if (!list.includes(n)) throw new InvalidArgumentError(`${what} must be one of ${list.join(', ')}`);
    return n;
  };
}

export const parseBits = choice(AFFINE_BITS, 'bits');
export const parseGroupSize = choice(AFFINE_GROUP_SIZES, 'the group size');
/** quantize also takes nvfp4's 16; the library checks each mode's own values. */
export const parseQuantizeGroupSize = choice([16, ...AFFINE_GROUP_SIZES], 'the group size');

export function parseRounding(value: string): AffineVariant {
  if (value !== 'gpu' && value !== 'cpu') throw new InvalidArgumentError('expected gpu (Metal kernel, mlx_lm.convert on a Mac) or cpu');
  return value;
}

export function parseGlobalScale(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('expected a positive finite number');
  return n;
}

export function parseFloatDtype(value: string): FloatDType {
  const v = value.toUpperCase();
  if (v !== 'F16' && v !== 'BF16' && v !== 'F32') throw new InvalidArgumentError('expected one of f16, bf16, f32');
  return v;
}

/** The output flags convert has, with the same meaning: the MLX commands are convert with a transform. */
export interface OutputFlags {
  force?: boolean;
  /** false with --no-fsync. */
  fsync: boolean;
  verify?: boolean;
  to?: string;
}

export const forceOption = (): Option => new Option('--force', 'replace existing output files, and remove stale shards of the output directory (in the same all-or-nothing commit)');
export const noFsyncOption = (): Option => new Option('--no-fsync', 'skip fsync before the final rename: faster, but a power loss right after may leave an empty output');
export const verifyOption = (): Option => new Option('--verify', 're-read the output and diff its values bit for bit against what was computed (off by default: about doubles the write time)');
/** Every format the registry writes; a writer that cannot hold the result refuses it (GGUF has no MLX types, .npy one array). */
export const toOption = (): Option => new Option('--to <format>', `output format of a file output, whatever its name: ${OUTPUT_FORMAT_NAMES.join(', ')}`).argParser(parseOutputFormat);

export function outputFlags(opts: OutputFlags): { force: boolean; fsync: boolean; verify?: boolean; to?: string } {
  return { force: opts.force === true, fsync: opts.fsync !== false, ...(opts.verify ? { verify: true } : {}), ...(opts.to ? { to: opts.to } : {}) };
}

/** A byte progress bar on stderr for human output; none with --json. */
export function progress(io: CommandIO, json: boolean | undefined, label: string): { onProgress?: (done: number, total: number) => void; finish: () => void } {
  if (json) return { finish: () => undefined };
  let bar: ProgressBar | null = null;
  return {
    onProgress: (done, total) => {
      bar ??= new ProgressBar(io.stderr, total, label);
      bar.update(done);
    },
    finish: () => bar?.finish(),
  };
}

function shortPath(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path;
}

/** Warnings on stderr, then the files written (and copied) on stdout. */
export function printWritten(io: CommandIO, r: MlxCommandResult): void {
  for (const w of r.warnings) io.stderr.write(`tensorport: warning: ${describeFinding(w)}\n`);
  const files = r.files.length - r.copied.length;
  io.stdout.write(`wrote ${files} file${files === 1 ? '' : 's'} (${r.tensors} tensor${r.tensors === 1 ? '' : 's'}, ${formatBytes(r.bytes)}), validated${r.verified ? ' and diffed equal' : ''}:\n`);
  for (const f of r.files.slice(0, files)) io.stdout.write(`  ${escapeTerminal(shortPath(f))}\n`);
  if (r.copied.length > 0) io.stdout.write(`copied from the input model: ${escapeTerminal(r.copied.join(', '))}\n`);
}

/** "12 layers at 4 bits/group 64, 2 at 8 bits/group 64 (affine)". */
export function summarizeLayers(r: MlxCommandResult): string {
  const counts = new Map<string, number>();
  for (const l of r.quantization) {
    const key = `${l.bits} bits/group ${l.groupSize} (${l.mode})`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts].map(([k, n]) => `${n} layer${n === 1 ? '' : 's'} at ${k}`).join(', ');
}
