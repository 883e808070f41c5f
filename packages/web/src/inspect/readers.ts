import { SafetensorsFile, TensorportError, toFinding, validateSafetensors, type Context, type Finding, type ShardedCheckpoint, type TensorDescriptor } from '@tensorport/core';
import { allowedGlobals, scanCheckpoint, scanContext, type ScanReport } from '@tensorport/torch-zip';
import { ggufView, type AnyFormat } from '@tensorport/lib';
import type { PickleSection } from './report.ts';

/**
 * What the page shows beside the library's reading of a drop: the pickle verdict for formats that
 * hold pickles, and a note on what was (not) read. Which reader runs is the library's registry's
 * choice, as for the CLI.
 */
export interface Reading {
  format: string;
  errors: Finding[];
  warnings: Finding[];
  metadata: ReadonlyMap<string, string> | null;
  tensors: readonly TensorDescriptor[];
  pickle: PickleSection | null;
  notes: string[];
}

export function reading(format: string): Reading {
  return { format, errors: [], warnings: [], metadata: null, tensors: [], pickle: null, notes: [] };
}

/** Runs `body`; a TensorportError becomes the reading's error (anything else is a bug and propagates). */
async function guarded(r: Reading, body: () => Promise<void>): Promise<Reading> {
  try {
    await body();
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
    r.errors.push(toFinding(e));
  }
  return r;
}

/** The format's own reader through the library, its warnings and tensors copied into the reading. */
async function opened(r: Reading, format: AnyFormat, ctx: Context, note?: string): Promise<Reading> {
  return guarded(r, async () => {
    const cp = await format.open(ctx);
    r.format = cp.format;
    if ('warnings' in cp && Array.isArray(cp.warnings)) r.warnings.push(...(cp.warnings as Finding[]));
    r.metadata = cp.metadata;
    r.tensors = cp.tensors;
    if (note) r.notes.push(note);
  });
}

/** The header: 8 bytes, then N bytes, nothing else; validated exactly as the safetensors crate does. */
async function readSafetensorsFile(ctx: Context): Promise<Reading> {
  const r = reading('safetensors');
  const source = await ctx.source();
  const v = await validateSafetensors(source);
  r.errors.push(...v.errors);
  r.warnings.push(...v.warnings);
  if (v.header) {
    const file = new SafetensorsFile(source, v.header);
    r.metadata = file.metadata;
    r.tensors = file.tensors;
  }
  r.notes.push('Tensor data is not read: the header is validated exactly as the safetensors crate does (offsets, overlaps, sizes, coverage of the file).');
  return r;
}

/** Reads a drop with the format the registry chose. */
export async function readWith(format: AnyFormat, ctx: Context): Promise<Reading> {
  const sharded = ctx.entry === null || ctx.entry.endsWith('.index.json');
  switch (format.name) {
    case 'safetensors': {
      if (!sharded) return readSafetensorsFile(ctx);
      const r = reading('safetensors-sharded');
      return guarded(r, async () => {
        const cp = (await format.open(ctx)) as ShardedCheckpoint;
        r.warnings.push(...cp.warnings);
        for (const s of cp.shards) r.warnings.push(...s.checkpoint.header.warnings.map((w) => ({ ...w, path: w.path ?? s.file })));
        r.metadata = cp.metadata;
        r.tensors = cp.tensors;
        r.notes.push(`${cp.shards.length} shard header(s) checked against the index; tensor data is not read.`);
      });
    }
    case 'torch':
      return sharded ? opened(reading('torch-sharded'), format, ctx, 'Every shard was scanned before it was opened; storage data is not read.') : readTorch(format, ctx);
    case 'npz': {
      const r = reading('npz');
      const scan = await scanContext(ctx);
      if (scan.pickles > 0 || !scan.safe) r.pickle = pickleSection(scan);
      return opened(r, format, ctx, 'Array data is not read, so member CRC-32s are not checked here (tensorport validate checks them).');
    }
    case 'gguf': {
      // The vocabulary is counted, not listed: ggufView cuts metadata arrays as `inspect` does.
      const r = reading('gguf');
      return guarded(r, async () => {
        const view = ggufView(await format.open(ctx));
        r.warnings.push(...view.warnings);
        r.metadata = view.metadata;
        r.tensors = view.tensors;
        r.notes.push(view.note);
      });
    }
    default:
      return opened(reading(format.name), format, ctx);
  }
}

/**
 * A torch.save file: first the pickle scan (every global it would import, judged against the
 * allowlist, nothing executed); only a safe file is then opened to list its tensors.
 */
async function readTorch(format: AnyFormat, ctx: Context): Promise<Reading> {
  const scan = await scanContext(ctx);
  const r = reading(scan.format === 'pickle' ? 'torch-legacy' : scan.format);
  r.pickle = pickleSection(scan);
  r.errors.push(...scan.findings);
  if (!scan.safe) {
    r.notes.push('The pickle references globals outside the allowlist (or is malformed), so the checkpoint was not opened. Nothing was executed.');
    return r;
  }
  return opened(r, format, ctx, 'Storage data is not read: tensor extents are checked against storage sizes, bytes are not streamed (tensorport validate streams them).');
}

/** A bare pickle stream: the scan is all there is to show. */
export async function readPickle(ctx: Context): Promise<Reading> {
  const source = await ctx.source();
  const scan = await scanCheckpoint(source, { path: source.name });
  const r = reading('pickle');
  r.pickle = pickleSection(scan);
  r.errors.push(...scan.findings);
  r.notes.push('A bare pickle holds no tensors this page can list; only its globals are shown.');
  return r;
}

let allowed: ReadonlySet<string> | null = null;

function pickleSection(scan: ScanReport): PickleSection {
  allowed ??= new Set(allowedGlobals());
  const set = allowed;
  return { safe: scan.safe, globals: scan.globals.map((name) => ({ name, allowed: set.has(name) })), findings: scan.findings, pickles: scan.pickles };
}
