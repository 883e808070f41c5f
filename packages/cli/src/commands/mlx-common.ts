/** Option parsers and output shared by the MLX commands (quantize, dequantize, repack). */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { AFFINE_BITS, AFFINE_GROUP_SIZES, TensorportError, type AffineVariant, type FloatDType } from '@tensorport/lib';
import type { MlxPathOptions, MlxPathResult } from '@tensorport/lib/node';
import { OUTPUT_FORMAT_NAMES, parseJobs, parseMetadataPair, parseOutputFormat, parseSizeOption } from '../options.ts';
import { interruptible } from '../interrupt.ts';
import { progressFor } from '../progress.ts';
import { describeFinding, escapeTerminal, plural, shortPath } from '../report.ts';
import { formatBytes } from '../size.ts';
import type { CommandContext } from './context.ts';

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
  jobs?: number;
  maxShardSize?: number;
  metadata?: Record<string, string>;
}

/** The output flags (the same as convert's), for an MLX command to add. */
export function outputOptions(): Option[] {
  return [
    new Option('--force', 'replace existing output files, and remove stale shards of the output directory (in the same all-or-nothing commit)'),
    new Option('--no-fsync', 'skip fsync before the final rename: faster, but a power loss right after may leave an empty output'),
    new Option('--verify', 're-read the output and diff its values bit for bit against what was computed (off by default: about doubles the write time)'),
    // Every format the registry writes; a writer that cannot hold the result refuses it (GGUF has no MLX types, .npy one array).
    new Option('--to <format>', `output format of a file output, whatever its name: ${OUTPUT_FORMAT_NAMES.join(', ')}`).argParser(parseOutputFormat),
    new Option('--jobs <n>', 'directory output: shards written at the same time (the bytes are the same)').argParser(parseJobs),
    new Option('--max-shard-size <size>', 'directory output: largest shard (default 5GiB, as mlx-lm; 5GB = 5e9 bytes, decimals such as 1.5GB too)').argParser(parseSizeOption),
    new Option('--metadata <KEY=VALUE>', 'safetensors output: an entry added to __metadata__ (repeatable)').argParser(parseMetadataPair),
  ];
}

/** Adds `options` to `command`, in order (commander has no addOptions). */
export function withOptions(command: Command, options: readonly Option[]): Command {
  for (const o of options) command.addOption(o);
  return command;
}

export function outputFlags(opts: OutputFlags): Omit<MlxPathOptions, 'input' | 'output'> {
  return {
    force: opts.force === true,
    fsync: opts.fsync !== false,
    ...(opts.verify ? { verify: true } : {}),
    ...(opts.to ? { to: opts.to } : {}),
    ...(opts.jobs === undefined ? {} : { jobs: opts.jobs }),
    ...(opts.maxShardSize === undefined ? {} : { maxShardSize: opts.maxShardSize }),
    ...(opts.metadata ? { metadata: opts.metadata } : {}),
  };
}

/** The library's message plus how to settle it from the command line. */
function withHint(e: unknown): never {
  if (e instanceof TensorportError && e.code === 'MlxAmbiguousQuantization') {
    throw new TensorportError(e.code, `${e.message}; pass --bits and --group-size (or give the model directory with its config.json)`, {
      ...(e.tensor === undefined ? {} : { tensor: e.tensor }),
      cause: e,
    });
  }
  throw e;
}

/**
 * Runs a command's write with a progress bar on stderr (none under --json) and, in the bin, under
 * Ctrl-C handling as convert has it: the line saying what the rollback left at `output`, exit 130.
 * A failure propagates; program.ts prints it (one object under --json).
 */
export async function runWrite<T>(ctx: CommandContext, json: boolean | undefined, label: string, output: string, work: (progress: { onProgress?: (done: number, total: number) => void }) => Promise<T>): Promise<T> {
  const bar = progressFor(ctx.stderr, json, label);
  const go = () => work(bar.onProgress ? { onProgress: bar.onProgress } : {}).catch(withHint).finally(bar.finish);
  return ctx.handleSignals ? interruptible(output, ctx.err, go, bar.finish) : go();
}

/** Warnings on stderr, then the files written (and copied) on stdout. */
export function printWritten(ctx: Pick<CommandContext, 'out' | 'err'>, r: MlxPathResult): void {
  for (const w of r.warnings) ctx.err(`tensorport: warning: ${describeFinding(w)}\n`);
  const files = r.files.length - r.copied.length;
  ctx.out(`wrote ${plural(files, 'file')} (${plural(r.tensors, 'tensor')}, ${formatBytes(r.bytes)}), validated${r.verified ? ' and diffed equal' : ''}:\n`);
  for (const f of r.files.slice(0, files)) ctx.out(`  ${escapeTerminal(shortPath(f))}\n`);
  if (r.copied.length > 0) ctx.out(`copied from the input model: ${escapeTerminal(r.copied.join(', '))}\n`);
}

/** "12 layers at 4 bits/group 64, 2 at 8 bits/group 64 (affine)". */
export function summarizeLayers(r: MlxPathResult): string {
  const counts = new Map<string, number>();
  for (const l of r.quantization) {
    const key = `${l.bits} bits/group ${l.groupSize} (${l.mode})`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts].map(([k, n]) => `${plural(n, 'layer')} at ${k}`).join(', ');
}
