import {
  DEFAULT_INDEX_LIMITS, SafetensorsFile, TensorportError, openShardedCheckpoint, toFinding, validateSafetensors,
  type ByteSource, type Finding, type TensorDescriptor,
} from '@tensorport/core';
import { fflateCodec, openNpy, openNpz } from '@tensorport/npz';
import { allowedGlobals, openTorchCheckpoint, scanCheckpoint, type ScanReport } from '@tensorport/torch-zip';
import type { SourcePool } from './files.ts';
import type { PickleSection } from './report.ts';

/** What one reader learned; the page's report is built from it. */
export interface Reading {
  format: string;
  errors: Finding[];
  warnings: Finding[];
  metadata: ReadonlyMap<string, string> | null;
  tensors: readonly TensorDescriptor[];
  pickle: PickleSection | null;
  notes: string[];
}

function reading(format: string): Reading {
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

/** The header: 8 bytes, then N bytes, nothing else. */
export async function readSafetensors(source: ByteSource): Promise<Reading> {
  const r = reading('safetensors');
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

/** The index (read whole, bounded) and every shard's header. */
export async function readSharded(pool: SourcePool, indexName: string): Promise<Reading> {
  const r = reading('safetensors-sharded');
  return guarded(r, async () => {
    const bytes = await pool.readSmall(indexName, DEFAULT_INDEX_LIMITS.maxBytes);
    const cp = await openShardedCheckpoint(bytes, async (file) => pool.open(file));
    r.warnings.push(...cp.warnings);
    for (const s of cp.shards) r.warnings.push(...s.checkpoint.header.warnings.map((w) => ({ ...w, path: w.path ?? s.file })));
    r.metadata = cp.metadata;
    r.tensors = cp.tensors;
    r.notes.push(`${cp.shards.length} shard header(s) checked against the index; tensor data is not read.`);
  });
}

/** The ZIP central directory, each member's local header and .npy header; pickles, if any, are scanned. */
export async function readNpz(source: ByteSource): Promise<Reading> {
  const r = reading('npz');
  const scan = await scanCheckpoint(source, { path: source.name, zipCodec: fflateCodec });
  if (scan.pickles > 0 || !scan.safe) r.pickle = pickleSection(scan);
  return guarded(r, async () => {
    const cp = await openNpz(source, { codec: fflateCodec });
    r.warnings.push(...cp.warnings);
    r.tensors = cp.tensors;
    r.notes.push('Array data is not read, so member CRC-32s are not checked here (tensorport validate checks them).');
  });
}

/** A single .npy: its header only. */
export async function readNpy(source: ByteSource): Promise<Reading> {
  const r = reading('npy');
  return guarded(r, async () => {
    const cp = await openNpy(source);
    r.warnings.push(...cp.warnings);
    r.tensors = cp.tensors;
  });
}

/**
 * A torch.save file: first the pickle scan (every global it would import, judged against the
 * allowlist, nothing executed); only a safe file is then opened to list its tensors.
 */
export async function readTorch(source: ByteSource): Promise<Reading> {
  const scan = await scanCheckpoint(source, { path: source.name, zipCodec: fflateCodec });
  const r = reading(scan.format === 'pickle' ? 'torch-legacy' : scan.format);
  r.pickle = pickleSection(scan);
  r.errors.push(...scan.findings);
  if (!scan.safe) {
    r.notes.push('The pickle references globals outside the allowlist (or is malformed), so the checkpoint was not opened. Nothing was executed.');
    return r;
  }
  return guarded(r, async () => {
    const cp = await openTorchCheckpoint(source, { zipCodec: fflateCodec });
    r.format = cp.format;
    r.warnings.push(...cp.warnings);
    r.metadata = cp.metadata;
    r.tensors = cp.tensors;
    r.notes.push('Storage data is not read: tensor extents are checked against storage sizes, bytes are not streamed (tensorport validate streams them).');
  });
}

/** A bare pickle stream: the scan is all there is to show. */
export async function readPickle(source: ByteSource): Promise<Reading> {
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
