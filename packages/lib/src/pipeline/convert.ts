import {
  castTensors, diffCheckpoints, isCastable, TensorportError,
  type CastTarget, type Checkpoint, type Context, type ErrorCode, type Finding, type OutputTarget, type TensorDescriptor,
} from '@tensorport/core';
import type { NpzFormatWriteOptions } from '@tensorport/npz';
import type { SafetensorsWriteOptions } from '@tensorport/core';
import { defaultRegistry, type AnyFormat } from '../registry.ts';
import { fromGguf, toGguf } from '../gguf.ts';
import { dequantizeHfQuantized } from '../hf-quant.ts';
import { carriedFiles } from '../model-files.ts';
import { HeldTarget } from './held-target.ts';
import { openInput, type PipelineOptions } from './open.ts';
import type { Transform, Transformed } from './transform.ts';

/** Writer options by format name, each format's own. */
export interface WriteOptionsByFormat {
  safetensors?: SafetensorsWriteOptions;
  npz?: NpzFormatWriteOptions;
  [format: string]: unknown;
}

export type { DirectoryLayout, SideFile, Transform, Transformed } from './transform.ts';

export interface ConvertOptions extends PipelineOptions {
  input: Context;
  target: OutputTarget;
  /** Output format by name (default safetensors). */
  to?: string;
  /** Cast F16/BF16/F32/F64 tensors to this dtype; other dtypes are kept (and named in `warnings`). */
  dtype?: CastTarget | Lowercase<CastTarget>;
  /** Applied after load, before the cast and the write. */
  transform?: Transform;
  write?: WriteOptionsByFormat;
  /** Re-read the written output and diff it bit for bit against the input (costs about +120% of the conversion time). */
  verify?: boolean;
  /** A directory output gets the input model directory's config.json, tokenizer and other side files (default true; model-files.ts). */
  carry?: boolean;
  /** GGUF input or output without a `transform`: how blocks are read back or which ggml type is written. */
  gguf?: { type?: string; keepBlocks?: boolean };
  onProgress?: (done: number, total: number) => void;
}

export interface ConvertReport {
  from: string;
  to: string;
  /** Every file written, as the target locates them: the tensors' files (each re-read and validated), then the side files. */
  files: string[];
  /** Side files copied unchanged from the input model directory (names; also in `files`). */
  copied: string[];
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

export function castTarget(dtype: string | undefined): CastTarget | undefined {
  const d = dtype?.toUpperCase();
  if (d !== undefined && !CAST_TARGETS.includes(d)) throw new TensorportError('InvalidOption', `cannot cast to ${dtype}: the targets are f16, bf16 and f32`);
  return d as CastTarget | undefined;
}

/** The writer called `to`; UnsupportedFormat when no format of the registry writes it. */
export function writerFor(to: string, options: PipelineOptions = {}): AnyFormat {
  const writer = (options.registry ?? defaultRegistry).byName(to);
  if (!writer?.write) throw new TensorportError('UnsupportedFormat', `tensorport cannot write ${to} yet`);
  return writer;
}

/**
 * load, transform, save, check: opens the input once (its format by content), casts when asked,
 * writes through the target's output policy, then reads the output back once (validation, the
 * written names/dtypes/shapes, and with `verify` every value). A directory output also gets the
 * input model directory's side files (config.json, tokenizer…, model-files.ts) and the transform's
 * own. All or nothing: the writer's files, the side files and the removal of stale weight files are
 * one commit, settled only after the checks; when one fails, every file is put back as it was.
 */
export async function convert(options: ConvertOptions): Promise<ConvertReport> {
  const writer = writerFor(options.to ?? 'safetensors', options);
  // The input is held in `held` alone (no local of this function names it), so letting go of it
  // there lets it be collected.
  const held: Held = { target: null, input: null };
  const { warnings, from } = await openInto(held, options);
  try {
    const out = await writeFrom(held.input!, warnings, writer, options, held);
    const target = held.target!;
    const verified = options.verify === true;
    // Without `verify` the input is not read again: its descriptors (~70 MB for 100,000 torch
    // tensors) go before the read-back, which needs only what was written, and so does what the
    // context parsed for them (a 100,000-member ZIP directory, 18 MB; a safetensors header).
    if (!verified) {
      await closeInput(held);
      options.input.forget?.();
    }
    await checkOutput(writer, target, out.files, out.check);
    await target.finish();
    return { from, to: writer.name, files: out.files.map((f) => target.locate(f)), copied: out.copied, tensors: out.check.count, bytes: out.bytes, cast: out.cast, verified, warnings };
  } catch (e) {
    // The writer leaves nothing behind when it fails; this undoes what was committed before a later step failed.
    await held.target?.fail();
    throw e;
  } finally {
    await closeInput(held);
  }
}

/** What convert holds between its steps: the target once made, the input until it is let go. */
interface Held {
  target: HeldTarget | null;
  input: Checkpoint | null;
}

async function openInto(held: Held, options: ConvertOptions): Promise<{ warnings: Finding[]; from: string }> {
  const { checkpoint, warnings } = await openInput(options.input, options);
  held.input = checkpoint;
  return { warnings, from: checkpoint.format };
}

async function closeInput(held: Held): Promise<void> {
  const input = held.input;
  held.input = null;
  await input?.close();
}

/** The written files and what reading them back must give. */
interface Written {
  files: string[];
  copied: string[];
  bytes: number;
  cast: number;
  check: WrittenCheck;
}

/**
 * The steps that use the input: transform, cast, write, side files. Its locals (the tensors, the
 * transformed checkpoint) end with it, so that only `held.input` keeps the input alive after it.
 */
async function writeFrom(checkpoint: Checkpoint, warnings: Finding[], writer: AnyFormat, options: ConvertOptions, held: Held): Promise<Written> {
  const requested = castTarget(options.dtype);
  // A GGUF output's types are the transform's (norms stay F32), not a cast's.
  const dtype = writer.name === 'gguf' ? undefined : requested;
  const { input: ctx } = options;
  options.target.protect(inputFiles(ctx));
  // A dtype asked of a quantized checkpoint (FP8 blocks) dequantizes it rather than casting around its codes.
  const transform = options.transform ?? ggufBridge(checkpoint, writer.name, { ...options.gguf, ...(requested ? { dtype: requested } : {}) }) ?? (requested ? dequantizeHfQuantized(requested) : undefined);
  const loaded: Transformed = transform ? await transform(checkpoint, ctx) : checkpoint;
  warnings.push(...(transform ? (loaded.warnings ?? []) : []));
  const own: Partial<Transformed> = transform ? loaded : {};
  own.checkOutput?.(options.target, writer.name);
  const tensors = dtype === undefined ? [...loaded.tensors] : castTensors(loaded.tensors, dtype);
  const cast = dtype === undefined ? 0 : loaded.tensors.filter((t) => t.dtype !== dtype && isCastable(t.dtype)).length;
  if (dtype !== undefined) warnings.push(...keptDtypes(loaded.tensors, dtype));
  const layout = options.target.directory && writer.name === 'safetensors' ? own.layout : undefined;
  const made = [...(layout?.files ?? []), ...(own.files ?? [])];
  if (!options.target.directory && own.files?.length) {
    warnings.push({ code: 'SideFilesSkipped', message: `${own.files.map((f) => f.name).join(', ')} not written: the output is one file; give a directory (ending with '/') to get them`, path: options.target.name });
  }
  const carried = options.target.directory && options.carry !== false ? await carriedFiles(ctx, warnings, new Set(made.map((f) => f.name))) : [];
  const side = options.target.directory ? [...made, ...carried] : [];
  const target = new HeldTarget(options.target, side);
  held.target = target;
  const common = { ...(options.onProgress ? { onProgress: options.onProgress } : {}) };
  const result = layout
    ? await layout.write(tensors, loaded.metadata, target, { ...options.write?.safetensors, ...common })
    : await writer.write!(tensors, loaded.metadata, target, {
        // transformers refuses (or crashes on) safetensors without `format` (issue 11 item 13)
        ...(writer.name === 'safetensors' ? { defaultMetadata: DEFAULT_SAFETENSORS_METADATA } : {}),
        ...((options.write?.[writer.name] as object | undefined) ?? {}),
        ...(own.write ?? {}),
        ...common,
      });
  const files = [...result.files];
  warnings.push(...(result.warnings ?? []));
  const sideNames = side.length > 0 ? await target.commitSide() : [];
  files.push(...sideNames);
  const bytes = result.bytes + side.filter((f) => sideNames.includes(f.name)).reduce((n, f) => n + f.bytes.byteLength, 0);
  const copied = carried.map((f) => f.name).filter((n) => sideNames.includes(n));
  return { files, copied, bytes, cast, check: writtenCheck(writer, tensors, options.verify === true) };
}

/** Without a transform, GGUF on one side only: the package's mapping (fromGguf/toGguf), else nothing. */
function ggufBridge(checkpoint: Checkpoint, to: string, options: { type?: string; keepBlocks?: boolean; dtype?: CastTarget }): Transform | undefined {
  const from = checkpoint.format === 'gguf';
  if (from === (to === 'gguf')) return undefined;
  if (from) return fromGguf({ ...(options.dtype ? { dtype: options.dtype } : {}), ...(options.keepBlocks ? { keepBlocks: true } : {}) });
  const type = options.type ?? options.dtype;
  return toGguf(type === undefined ? {} : { type });
}

/** What a safetensors output's `__metadata__` gets when the input has no `format` entry (convert.py and transformers write `pt`). */
export const DEFAULT_SAFETENSORS_METADATA: Readonly<Record<string, string>> = Object.freeze({ format: 'pt' });

/** What the conversion reads: the input and every file the context opened for it (the shards, an index). */
function inputFiles(ctx: Context): string[] {
  // Every byte a reader yields comes through the context, so the files it opened are the inputs:
  // nothing to stat per tensor (100,000 of them for a large .pt).
  return [...new Set<string>([ctx.name, ...ctx.opened()])];
}

/** One warning naming the dtypes a cast leaves alone (integers, BOOL, quantized F8/F6/F4, C64). */
function keptDtypes(tensors: readonly TensorDescriptor[], dtype: CastTarget): Finding[] {
  const kept = new Map<string, number>();
  for (const t of tensors) if (t.dtype !== dtype && !isCastable(t.dtype)) kept.set(t.dtype, (kept.get(t.dtype) ?? 0) + 1);
  if (kept.size === 0) return [];
  const list = [...kept].map(([d, n]) => `${n} ${d}`).join(', ');
  return [{ code: 'CastSkipped', message: `kept ${list} tensor(s) unchanged: a cast converts only F16, BF16, F32 and F64` }];
}

/**
 * What reading the output back must give: each written tensor's dtype, byte length and shape by
 * name, the reader options that read it as written, and (for `verify`) the tensors themselves.
 * Without them it holds no descriptor, so nothing keeps the input alive.
 */
interface WrittenCheck {
  count: number;
  readBack: unknown;
  /** Name → index into the arrays below (columns, not an object per tensor: 100,000 of them). */
  index: Map<string, number>;
  dtypes: string[];
  byteLengths: Float64Array;
  shapes: Array<readonly number[]>;
  verify: readonly TensorDescriptor[] | null;
}

function writtenCheck(writer: AnyFormat, tensors: readonly TensorDescriptor[], verify: boolean): WrittenCheck {
  const n = tensors.length;
  const check: WrittenCheck = { count: n, readBack: writer.readBack?.(tensors), index: new Map(), dtypes: new Array<string>(n), byteLengths: new Float64Array(n), shapes: new Array<readonly number[]>(n), verify: verify ? tensors : null };
  tensors.forEach((t, i) => {
    check.index.set(t.name, i);
    check.dtypes[i] = t.dtype;
    check.byteLengths[i] = t.byteLength;
    check.shapes[i] = t.shape;
  });
  return check;
}

/**
 * Re-reads what was written, through one context: the output must pass the format's validator,
 * opening it must give the tensor names, dtypes and shapes that were written, and with `verify`
 * its values must diff equal to what was written (the input, cast when asked).
 */
export async function checkWritten(writer: AnyFormat, target: OutputTarget, files: readonly string[], tensors: readonly TensorDescriptor[], verify: boolean): Promise<void> {
  await checkOutput(writer, target, files, writtenCheck(writer, tensors, verify));
}

async function checkOutput(writer: AnyFormat, target: OutputTarget, files: readonly string[], check: WrittenCheck): Promise<void> {
  const ctx = await target.reopen(files);
  try {
    const first = writer.validate ? (await writer.validate(ctx, check.readBack)).errors[0] : undefined;
    if (first) {
      throw new TensorportError(first.code as ErrorCode, `the written output failed validation: ${first.message}`, {
        path: first.path ?? ctx.name,
        ...(first.tensor === undefined ? {} : { tensor: first.tensor }),
        ...(first.offset === undefined ? {} : { offset: Number(first.offset) }),
      });
    }
    const back = await writer.open(ctx, check.readBack);
    try {
      const differs = (t: TensorDescriptor): boolean => {
        const i = check.index.get(t.name);
        return i === undefined || check.dtypes[i] !== t.dtype || check.byteLengths[i] !== t.byteLength || !sameShape(check.shapes[i]!, t.shape);
      };
      if (back.tensors.length !== check.count || back.tensors.some(differs)) {
        throw new TensorportError('ShardMismatch', `reading ${ctx.name} back does not give the ${check.count} tensors that were written`, { path: ctx.name });
      }
      if (check.verify) await verifyContent(back, ctx.name, check.verify);
    } finally {
      await back.close();
    }
  } finally {
    await ctx.close();
  }
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/**
 * `verify`: the written output, opened by its own reader, diffed value by value (bit-exact,
 * streaming) against the tensors that were written. Catches what validation cannot: right
 * structure, wrong bytes.
 */
export async function verifyContent(back: Checkpoint, name: string, tensors: readonly TensorDescriptor[], onProgress?: (done: number, total: number) => void): Promise<void> {
  const r = await diffCheckpoints({ tensors, metadata: null }, back, onProgress ? { onProgress } : {});
  if (r.equal) return;
  const first = r.changed[0];
  const what = first
    ? `tensor ${JSON.stringify(first.name)} differs (${first.reason}${first.mismatches === undefined ? '' : `, ${first.mismatches} element(s)`})`
    : `${r.onlyInA.length} tensor(s) missing, ${r.onlyInB.length} unexpected`;
  throw new TensorportError('VerifyMismatch', `reading ${name} back does not give the input's values: ${what}`, { path: name, ...(first ? { tensor: first.name } : {}) });
}
