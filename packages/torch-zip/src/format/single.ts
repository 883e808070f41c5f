import { detectFormat, TensorportError, toFinding, type Context, type Finding, type ValidationReport, type ZipArchive } from '@tensorport/core';
import { allowedGlobals } from '../torch/allowlist.ts';
import { scanCheckpoint, type CheckpointScanOptions, type ScanReport } from '../scan.ts';
import type { PickleCapture } from '../torch/captured.ts';
import type { TorchCheckpoint } from '../torch/assemble.ts';
import { openTorchCheckpoint, type OpenTorchOptions } from '../torch/open.ts';
import { MAX_MODEL_CONFIG_BYTES, tiedWeightsFromJson, type TiedWeightsConfig } from '../torch/tied.ts';
import { validateTorchCheckpoint } from '../validate.ts';

const MODEL_CONFIG_FILE = 'config.json';

export interface TorchOpenOptions {
  /** Dotted path of the subtree holding the tensors (`state_dict`, `model`). */
  select?: string;
  /** Every name of a tied weight as its own tensor instead of once. */
  keepAliases?: boolean;
  /** Extraction mode: foreign globals become inert placeholders instead of refusing the file (see docs/security.md). */
  allowObjects?: boolean;
}

export function readerOptions(ctx: Context, options: TorchOpenOptions = {}): OpenTorchOptions {
  return {
    ...(ctx.codec ? { zipCodec: ctx.codec } : {}),
    ...(options.select === undefined ? {} : { select: options.select }),
    ...(options.keepAliases ? { keepAliases: true } : {}),
    ...(options.allowObjects ? { allowObjects: true } : {}),
  };
}

/**
 * The ZIP directory the context parsed (once, for the sniffer), so the scan and the reader do not
 * parse it again; nothing for a non-ZIP, or a directory the context could not parse (the reader
 * parses it itself to give its precise error).
 */
async function sharedArchive(ctx: Context, file?: string): Promise<{ archive?: ZipArchive }> {
  if (detectFormat(await ctx.head(file), await ctx.size(file)) !== 'zip') return {};
  const archive = await ctx.zip(file).catch(() => undefined);
  return archive ? { archive } : {};
}

/**
 * Scans a file's pickles (never running them): the report `tensorport scan` prints. With
 * `capture`, the pickles a reader assembles run in its configuration and are left there;
 * `identify` names files that hold no pickle (the library passes the one it assembles).
 */
export async function scanContext(ctx: Context, file?: string, options: Pick<CheckpointScanOptions, 'capture' | 'identify'> = {}): Promise<ScanReport> {
  const source = await ctx.source(file);
  return scanCheckpoint(source, { ...options, path: source.name, ...(ctx.codec ? { zipCodec: ctx.codec } : {}), ...(await sharedArchive(ctx, file)) });
}

/** The globals of a scan that are not on the allowlist, `module.name`. */
export function disallowedGlobals(report: ScanReport): string[] {
  const allowed = new Set(allowedGlobals());
  return report.globals.filter((g) => !allowed.has(g));
}

/** In extraction mode foreign names are let through, so the refusal is the first other finding. */
function unsafe(path: string, scan: ScanReport, allowObjects: boolean): TensorportError {
  const bad = allowObjects ? [] : disallowedGlobals(scan);
  if (bad.length > 0) {
    return new TensorportError('PickleDisallowedGlobal', `${path} is unsafe: its pickle references ${bad.join(', ')} (run 'tensorport scan ${path}' for every finding)`, { path });
  }
  const first = (allowObjects ? scan.findings.find((f) => f.code !== 'PickleDisallowedGlobal') : undefined) ?? scan.findings[0]!;
  return new TensorportError(first.code as 'PickleInvalid', `${path} is unsafe: ${first.message}`, { path });
}

/**
 * The scan-before-open policy, in one pass: the scan runs the pickles the reader assembles (in the
 * reader's configuration, carrying on past a disallowed global with an inert placeholder), so a
 * refusal names every offending global, nothing is assembled from an unsafe file, and the reader
 * assembles the scan's values instead of running the pickles a second time.
 */
export async function openTorchFile(ctx: Context, file: string | undefined, options?: TorchOpenOptions): Promise<TorchCheckpoint> {
  const capture: PickleCapture = { allowObjects: options?.allowObjects === true };
  const scan = await scanContext(ctx, file, { capture });
  // extraction mode lets foreign names through (as placeholders), never any other finding
  const onlyForeign = capture.allowObjects && scan.verdict === 'unsafe' && scan.findings.every((f) => f.code === 'PickleDisallowedGlobal');
  if (!scan.safe && !onlyForeign) throw unsafe(ctx.path(file), scan, capture.allowObjects);
  const tiedWeights = await tiedWeightsIn(ctx);
  return openTorchCheckpoint(await ctx.source(file), {
    ...readerOptions(ctx, options), ...(await sharedArchive(ctx, file)), ...(tiedWeights ? { tiedWeights } : {}), ...(capture.pickles ? { captured: capture.pickles } : {}),
  });
}

/** The model's config.json beside the checkpoint settles how tied weights are written (transformers' rule, torch/tied.ts). */
async function tiedWeightsIn(ctx: Context): Promise<TiedWeightsConfig | undefined> {
  if (!(await ctx.has(MODEL_CONFIG_FILE))) return undefined;
  const bytes = await ctx.bytes(MODEL_CONFIG_FILE, MAX_MODEL_CONFIG_BYTES).catch(() => null);
  return bytes ? tiedWeightsFromJson(bytes, ctx.path(MODEL_CONFIG_FILE)) : undefined;
}

/** Full scan, then a full read (structure, every storage's size and every tensor's extent), each pickle run once. */
export async function validateTorchFile(ctx: Context, file: string | undefined, options?: TorchOpenOptions): Promise<ValidationReport> {
  const { report, checkpoint } = await validateTorchFileKeeping(ctx, file, options);
  await checkpoint?.close();
  return report;
}

/**
 * validateTorchFile's report, and the checkpoint it read when valid (read as `openTorchFile` reads
 * it, config.json's tied weights included): the sharded validate checks index and shards together
 * on these instead of running every pickle again. The caller closes it.
 */
export async function validateTorchFileKeeping(ctx: Context, file: string | undefined, options?: TorchOpenOptions): Promise<{ report: ValidationReport; checkpoint?: TorchCheckpoint }> {
  const path = ctx.path(file);
  try {
    const tiedWeights = await tiedWeightsIn(ctx);
    const r = await validateTorchCheckpoint(await ctx.source(file), { ...readerOptions(ctx, options), ...(await sharedArchive(ctx, file)), ...(tiedWeights ? { tiedWeights } : {}) });
    const at = (f: Finding): Finding => (f.path === undefined ? { ...f, path } : f);
    const report = { valid: r.valid, errors: r.errors.map(at), warnings: r.warnings.map(at), files: [path] };
    return r.checkpoint ? { report, checkpoint: r.checkpoint } : { report };
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
    return { report: { valid: false, errors: [{ path, ...toFinding(e) }], warnings: [], files: [path] } };
  }
}
