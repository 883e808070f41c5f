import { extensionOf, FolderContext, TensorportError, toFinding, type Context, type Finding } from '@tensorport/core';
import { findQuantizedLayers } from '@tensorport/mlx';
import { fflateCodec } from '@tensorport/npz';
import { defaultRegistry } from '@tensorport/lib';
import { checkpointEntry, dropFolder, MAX_CONFIG_BYTES, roleOf, SourcePool } from './files.ts';
import { reading, readPickle, readWith, type Reading } from './readers.ts';
import type { QuantRow, Report } from './report.ts';
import { toRow, totalsByDtype } from './rows.ts';

export type * from './report.ts';

/**
 * Inspects one drop of files without reading any of them whole: an index with its shards (and
 * config.json), or one checkpoint file. Never throws on bad input: every defect is a finding.
 */
export async function inspectFiles(files: readonly File[]): Promise<Report> {
  const pool = new SourcePool(files);
  const roles = files.map((f) => roleOf(f.name));
  const extra: Finding[] = [];

  // The input is the index (with its shards beside it) or one checkpoint file; the library's
  // registry decides what it is, exactly as for the CLI.
  const { entry, several } = checkpointEntry(files);
  let r: Reading;
  if (entry === undefined) {
    r = reading('unknown');
    r.errors.push({ code: 'NothingToInspect', message: files.length === 0 ? 'no file given' : 'no checkpoint among the files given (only JSON or text files)' });
  } else {
    if (several > 1) extra.push({ code: 'SeveralCheckpoints', message: `${several} files and no index; showing ${entry}. Drop one checkpoint, or an index with its shards.` });
    const ctx = new FolderContext(dropFolder(pool), entry, { codec: fflateCodec });
    try {
      r = await readDrop(ctx);
    } finally {
      await ctx.close();
    }
  }
  r.warnings.unshift(...extra);

  const tensors = r.tensors.map(toRow);
  const quantization = r.errors.length === 0 && tensors.length > 0 ? await quantizationOf(r, pool) : null;
  const opened = pool.openedNames;
  return {
    format: r.format,
    files: files.map((f, i) => ({ name: f.name, size: f.size, role: roles[i] === 'data' && !opened.has(f.name) ? 'ignored' : roles[i]! })),
    valid: r.errors.length === 0,
    errors: r.errors,
    warnings: r.warnings,
    metadata: r.metadata ? [...r.metadata] : null,
    tensors,
    totals: totalsByDtype(tensors),
    quantization,
    pickle: r.pickle,
    bytesRead: pool.bytesRead,
    bytesRequested: pool.bytesRequested,
    totalBytes: files.reduce((n, f) => n + f.size, 0),
    notes: r.notes,
  };
}

/** The registry's format; what it does not read is a finding (a bare pickle still gets its scan shown). */
async function readDrop(ctx: Context): Promise<Reading> {
  let format;
  try {
    format = (await defaultRegistry.detect(ctx)).format;
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
    if (e.code !== 'UnknownFormat' && e.code !== 'UnsupportedFormat') return failed('unknown', toFinding(e));
  }
  if (format) return readWith(format, ctx);
  const identified = await defaultRegistry.identify(await ctx.source(), { codec: fflateCodec });
  const kind = identified.kind;
  // Protocol 0/1 pickles need no PROTO opcode: their name says what to scan.
  if (kind === 'pickle' || ['.pkl', '.pickle'].includes(extensionOf(ctx.entry ?? ''))) return readPickle(ctx);
  const r = failed(kind, { code: 'UnknownFormat', message: `${ctx.name} is ${identified.what} (${identified.can}); this page reads safetensors, .npz, .npy and torch checkpoints`, path: ctx.name });
  if (kind === 'json') r.notes.push('A lone JSON file: drop model.safetensors.index.json together with its shards.');
  return r;
}

function failed(format: string, f: Finding): Reading {
  const r = reading(format);
  r.errors.push(f);
  return r;
}

/** MLX layers: `X.weight` (U32) next to `X.scales`, parameters from config.json when it was dropped too. */
async function quantizationOf(r: Reading, pool: SourcePool): Promise<Report['quantization']> {
  if (!r.tensors.some((t) => t.name.endsWith('.scales'))) return null;
  try {
    const config = pool.has('config.json') ? parseConfig(await pool.readSmall('config.json', MAX_CONFIG_BYTES)) : undefined;
    const layers = findQuantizedLayers({ tensors: r.tensors, metadata: r.metadata }, config === undefined ? {} : { config });
    if (layers.length === 0) return null;
    const rows: QuantRow[] = layers.map((l) => ({ path: l.path, bits: l.bits, groupSize: l.groupSize, mode: l.mode, shape: l.shape, source: l.source }));
    return { layers: rows, error: null };
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
    return { layers: [], error: toFinding(e) };
  }
}

function parseConfig(bytes: Uint8Array): unknown {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (e) {
    throw new TensorportError('MlxInvalidConfig', `config.json is not valid JSON: ${(e as Error).message}`, { path: 'config.json' });
  }
  return value;
}
