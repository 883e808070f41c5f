import { detectSource, TensorportError, toFinding, type ByteSource, type DetectedFormat, type Finding } from '@tensorport/core';
import { findQuantizedLayers } from '@tensorport/mlx';
import { sniffTorchCheckpoint } from '@tensorport/torch-zip';
import { MAX_CONFIG_BYTES, roleOf, SourcePool } from './files.ts';
import { readNpy, readNpz, readPickle, readSafetensors, readSharded, readTorch, type Reading } from './readers.ts';
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
  const index = files.find((_, i) => roles[i] === 'index');
  const data = files.filter((_, i) => roles[i] === 'data').sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const extra: Finding[] = [];

  let r: Reading;
  if (index) {
    r = await readSharded(pool, index.name);
  } else if (data[0]) {
    if (data.length > 1) extra.push({ code: 'SeveralCheckpoints', message: `${data.length} files and no index; showing ${data[0].name}. Drop one checkpoint, or an index with its shards.` });
    r = await readOne(pool.open(data[0].name));
  } else {
    r = { format: 'unknown', errors: [{ code: 'NothingToInspect', message: files.length === 0 ? 'no file given' : 'no checkpoint among the files given (only JSON or text files)' }], warnings: [], metadata: null, tensors: [], pickle: null, notes: [] };
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

/** Content decides; the extension only breaks a tie when the content is not recognised, so a broken file still gets its reader's precise error. */
async function readOne(source: ByteSource): Promise<Reading> {
  let kind: DetectedFormat = 'unknown';
  try {
    kind = await detectSource(source);
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
  }
  const ext = /\.([a-z0-9]+)$/i.exec(source.name)?.[1]?.toLowerCase() ?? '';
  if (kind === 'unknown') kind = ({ safetensors: 'safetensors', npz: 'zip', npy: 'npy', pt: 'pickle', pth: 'pickle', bin: 'pickle', ckpt: 'pickle', pkl: 'pickle' } as const)[ext] ?? 'unknown';
  switch (kind) {
    case 'safetensors':
      return readSafetensors(source);
    case 'npy':
      return readNpy(source);
    case 'zip':
      return (await sniffTorchCheckpoint(source)) === 'torch-zip' || ['pt', 'pth', 'bin', 'ckpt'].includes(ext) ? readTorch(source) : readNpz(source);
    case 'pickle':
      return source.size >= 2 && (await sniffTorchCheckpoint(source)) === 'torch-legacy' ? readTorch(source) : readPickle(source);
    default: {
      const what = kind === 'unknown' ? 'not a format tensorport reads' : `${kind}, which tensorport does not read`;
      return {
        format: kind, errors: [{ code: 'UnknownFormat', message: `${source.name} is ${what} (safetensors, .npz, .npy, torch .pt, pickle)`, path: source.name }],
        warnings: [], metadata: null, tensors: [], pickle: null,
        notes: kind === 'json' ? ['A lone JSON file: drop model.safetensors.index.json together with its shards.'] : [],
      };
    }
  }
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
