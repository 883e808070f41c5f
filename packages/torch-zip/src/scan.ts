import { BytesSource, openZip, TensorportError, type ByteSource, type DeflateCodec, type Finding } from '@tensorport/core';
import { runPickle, type RunResult } from './pickle/interpreter.ts';
import type { PickleLimits } from './pickle/limits.ts';
import { DEFAULT_MAX_PICKLE_BYTES, runPickleAt } from './pickle/stream.ts';
import { LEGACY_MAGIC } from './torch/legacy-format.ts';
import { StorageTable } from './torch/persistent.ts';

/**
 * What a pickle would make Python import and call, found by interpreting it (not by pattern
 * matching), so memo tricks, STACK_GLOBAL indirection and junk after STOP cannot hide a name.
 * `safe` means: only allowlisted globals, and well-formed within the limits.
 */
export interface ScanReport {
  safe: boolean;
  format: 'pickle' | 'torch-legacy' | 'torch-zip';
  /** Every global referenced, `module.name`, in order of first appearance. */
  globals: string[];
  /** Why it is not safe: disallowed globals (and the opcodes calling them), malformed input, limits. */
  findings: Finding[];
  /** How often each opcode ran, over all pickles scanned. */
  opcodes: Record<string, number>;
  /** Pickles scanned (a stream may hold several; a legacy checkpoint holds 5). */
  pickles: number;
}

export interface ScanOptions {
  limits?: Partial<PickleLimits>;
  maxPickleBytes?: number;
  /** Name used in findings. */
  path?: string;
}

/** Findings listed per report; a pickle naming a million distinct globals gets a count beyond it. */
const MAX_FINDINGS = 1000;

class Report {
  readonly globals = new Set<string>();
  readonly findings: Finding[] = [];
  readonly opcodes: Record<string, number> = Object.create(null) as Record<string, number>;
  pickles = 0;
  private unlisted = 0;

  add(r: RunResult): void {
    this.pickles++;
    for (const g of r.globals) this.globals.add(g);
    for (const f of r.findings) this.finding(f);
    for (const [k, v] of Object.entries(r.opcodes)) this.opcodes[k] = (this.opcodes[k] ?? 0) + v;
  }
  fail(e: unknown): void {
    if (!(e instanceof TensorportError)) throw e;
    this.finding(e.toJSON() as unknown as Finding);
  }
  private finding(f: Finding): void {
    if (this.findings.length < MAX_FINDINGS) this.findings.push(f);
    else this.unlisted++;
  }
  done(format: ScanReport['format']): ScanReport {
    const findings = this.unlisted > 0 ? [...this.findings, { code: 'PickleLimitExceeded', message: `${this.unlisted} more findings not listed` }] : this.findings;
    return { safe: findings.length === 0, format, globals: [...this.globals], findings, opcodes: this.opcodes, pickles: this.pickles };
  }
}

/**
 * Scans every pickle in `bytes`, back to back until the end (several pickles in one stream are
 * all scanned; bytes after the last STOP that are not a pickle are a finding).
 */
export function scanPickle(bytes: Uint8Array, opts: ScanOptions = {}): ScanReport {
  const report = new Report();
  scanStream(bytes, 0, report, opts);
  return report.done('pickle');
}

function scanStream(bytes: Uint8Array, start: number, report: Report, opts: ScanOptions): void {
  const storages = new StorageTable('any');
  let pos = start;
  do {
    const r = runPickle(bytes, pos, { mode: 'scan', persistentLoad: storages.load, ...optional(opts) });
    report.add(r);
    if (r.value === undefined) return;
    pos = r.end;
  } while (pos < bytes.length);
}

function optional(opts: ScanOptions): { limits?: Partial<PickleLimits>; path?: string } {
  return { ...(opts.limits ? { limits: opts.limits } : {}), ...(opts.path !== undefined ? { path: opts.path } : {}) };
}

const ZIP_MAGIC = [0x50, 0x4b, 0x03, 0x04];
const NPY_MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59];
const PROTO = 0x80;

export interface CheckpointScanOptions extends ScanOptions {
  /** Lets the scan read deflated ZIP members. */
  zipCodec?: DeflateCodec;
}

/**
 * Scans a checkpoint: the pickles of every ZIP member that is one (named `*.pkl`, or starting
 * with a PROTO opcode whatever its name, or an object-dtype `.npy`), the five pickles of a legacy
 * torch file (the storage bytes after them are data), a `.npy` file's pickle if it has one, or a
 * bare pickle stream. Never executes anything; a structural error becomes a finding.
 */
export async function scanCheckpoint(input: ByteSource | Uint8Array, opts: CheckpointScanOptions = {}): Promise<ScanReport> {
  const source = input instanceof Uint8Array ? new BytesSource(input, opts.path) : input;
  const head = await source.read(0, Math.min(source.size, 6));
  const report = new Report();
  try {
    if (startsWith(head, ZIP_MAGIC)) {
      await scanZip(source, report, opts);
      return report.done('torch-zip');
    }
    if (startsWith(head, NPY_MAGIC)) {
      const bytes = await readAll(source, opts);
      const at = npyPickleOffset(bytes);
      if (at !== null) scanStream(bytes, at, report, { ...opts, path: opts.path ?? source.name });
      return report.done('pickle');
    }
    return report.done((await scanPickleStream(source, report, opts)) ? 'torch-legacy' : 'pickle');
  } catch (e) {
    report.fail(e);
    return report.done(startsWith(head, ZIP_MAGIC) ? 'torch-zip' : 'pickle');
  }
}

/** Pickles back to back from offset 0; after a legacy magic number, only the five torch writes. */
async function scanPickleStream(source: ByteSource, report: Report, opts: ScanOptions): Promise<boolean> {
  const storages = new StorageTable('any');
  let pos = 0;
  let legacy = false;
  while (pos < source.size && !(legacy && report.pickles === 5)) {
    const r = await runPickleAt(source, pos, {
      mode: 'scan', persistentLoad: storages.load, ...optional(opts), path: opts.path ?? source.name,
      ...(opts.maxPickleBytes ? { maxPickleBytes: opts.maxPickleBytes } : {}),
    });
    report.add(r);
    if (r.value === undefined) break;
    if (report.pickles === 1 && r.value === LEGACY_MAGIC) legacy = true;
    pos = r.end;
  }
  return legacy;
}

async function scanZip(source: ByteSource, report: Report, opts: CheckpointScanOptions): Promise<void> {
  const zip = await openZip(source, opts.zipCodec ? { codec: opts.zipCodec } : {});
  const max = opts.maxPickleBytes ?? DEFAULT_MAX_PICKLE_BYTES;
  for (const e of zip.entries) {
    // torch storages are raw numbers: never pickles, whatever their first byte.
    if (/(^|\/)data\/[0-9]+$/.test(e.name) || e.name.endsWith('/')) continue;
    const first = await zip.readPrefix(e, 6);
    const npy = startsWith(first, NPY_MAGIC);
    if (!e.name.endsWith('.pkl') && first[0] !== PROTO && !npy) continue;
    if (e.uncompressedSize > max) throw new TensorportError('PickleLimitExceeded', `${e.name} is ${e.uncompressedSize} bytes; the limit is ${max} (option maxPickleBytes)`, { path: e.name });
    const bytes = await zip.readPrefix(e, e.uncompressedSize);
    const at = npy ? npyPickleOffset(bytes) : 0;
    if (at !== null) scanStream(bytes, at, report, { ...opts, path: e.name });
  }
}

async function readAll(source: ByteSource, opts: ScanOptions): Promise<Uint8Array> {
  const max = opts.maxPickleBytes ?? DEFAULT_MAX_PICKLE_BYTES;
  if (source.size > max) throw new TensorportError('PickleLimitExceeded', `${source.name} is ${source.size} bytes; the limit is ${max} (option maxPickleBytes)`, { path: source.name });
  return source.read(0, source.size);
}

/**
 * `.npy` (magic, version, header length, a Python dict literal): only object arrays (`descr` `|O`)
 * are followed by a pickle. Returns where it starts, or null when the array is plain numbers.
 */
function npyPickleOffset(bytes: Uint8Array): number | null {
  const major = bytes[6];
  const lenBytes = major === 1 ? 2 : 4;
  if (bytes.byteLength < 8 + lenBytes || (major !== 1 && major !== 2 && major !== 3)) {
    throw new TensorportError('PickleInvalid', 'truncated or unknown .npy header');
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const start = 8 + lenBytes + (lenBytes === 2 ? view.getUint16(8, true) : view.getUint32(8, true));
  if (start > bytes.byteLength) throw new TensorportError('PickleInvalid', '.npy header runs past the end');
  const header = new TextDecoder('latin1').decode(bytes.subarray(8 + lenBytes, start));
  return /['"][|<>=]?O['"]/.test(header) ? start : null;
}

function startsWith(b: Uint8Array, magic: readonly number[]): boolean {
  return b.byteLength >= magic.length && magic.every((m, i) => b[i] === m);
}
