import { startsWithMagic, TensorportError, toFinding, ZIP_LOCAL_MAGIC, type ByteSource, type Finding } from '@tensorport/core';
import { isLegacyTorchHead } from './format/identify.ts';
import { scanCheckpoint, type ScanReport } from './scan.ts';
import type { TorchCheckpoint } from './torch/assemble.ts';
import type { PickleCapture } from './torch/captured.ts';
import { openTorchCheckpoint, type OpenTorchOptions } from './torch/open.ts';

export interface TorchValidationReport {
  valid: boolean;
  /** Why not: scan findings (disallowed globals, malformed pickles), then the reader's refusal. */
  errors: Finding[];
  /** The reader's warnings (dropped values, big-endian data, skipped tensors). */
  warnings: Finding[];
  scan: ScanReport;
  /** The checkpoint as read, when valid (every tensor was streamed): a caller checking more keeps it open, and closes it. */
  checkpoint?: TorchCheckpoint;
}

/**
 * Everything a `validate` command wants for a torch file, never throwing on bad input: the scan
 * verdict, then a full read (open, and every tensor's bytes streamed once, so extents, gathers and
 * byte swaps all run). Each pickle runs once: the scan runs the ones the reader assembles in its
 * configuration, and the reader assembles those values. The source is not closed.
 */
export async function validateTorchCheckpoint(source: ByteSource, opts: OpenTorchOptions = {}): Promise<TorchValidationReport> {
  const capture: PickleCapture = { allowObjects: opts.allowObjects === true };
  const scan = await scanCheckpoint(source, {
    path: source.name, capture,
    ...(opts.zipCodec ? { zipCodec: opts.zipCodec } : {}), ...(opts.archive ? { archive: opts.archive } : {}), ...(opts.limits ? { limits: opts.limits } : {}),
  });
  const errors: Finding[] = [...scan.findings];
  let warnings: Finding[] = [];
  let c: TorchCheckpoint | null = null;
  if (scan.safe) {
    try {
      c = await openTorchCheckpoint(source, { ...opts, ...(capture.pickles ? { captured: capture.pickles } : {}) });
      warnings = c.warnings;
      for (const t of c.tensors) for await (const chunk of t.chunks()) void chunk;
    } catch (e) {
      if (!(e instanceof TensorportError)) throw e;
      errors.push(toFinding(e));
    }
  }
  return { valid: errors.length === 0, errors, warnings, scan, ...(c && errors.length === 0 ? { checkpoint: c } : {}) };
}

/**
 * Cheap content sniff for format detection: torch writes `<prefix>/data.pkl` as the first ZIP
 * member (a TorchScript archive too; `openTorchCheckpoint` tells them apart), so its local header
 * name says "torch" without reading the central directory. Legacy files start with the pickled
 * magic number. Archives reordered by other tools are not recognised here, only by opening.
 */
export async function sniffTorchCheckpoint(source: ByteSource): Promise<'torch-zip' | 'torch-legacy' | null> {
  const head = await source.read(0, Math.min(source.size, 30 + 256));
  if (head.byteLength >= 30 && startsWithMagic(head, ZIP_LOCAL_MAGIC)) {
    const n = head[26]! | (head[27]! << 8);
    const name = new TextDecoder('utf-8', { fatal: false }).decode(head.subarray(30, 30 + n));
    return /^[^/]+\/data\.pkl$/.test(name) ? 'torch-zip' : null;
  }
  return isLegacyTorchHead(head) ? 'torch-legacy' : null;
}
