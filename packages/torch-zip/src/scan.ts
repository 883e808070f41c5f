import { BytesSource, CORE_IDENTIFIERS, identifyWith, openZip, readInOrder, SliceSource, startsWithMagic, TensorportError, ZIP_LOCAL_MAGIC, type ByteSource, type DeflateCodec, type Finding, type ZipArchive, type ZipEntry } from '@tensorport/core';
import { startsWithNpyMagic } from '@tensorport/npz';
import { runPickle, type RunResult } from './pickle/interpreter.ts';
import type { PickleLimits } from './pickle/limits.ts';
import { PROTO } from './pickle/opcodes.ts';
import { DEFAULT_MAX_PICKLE_BYTES, runPickleAt } from './pickle/stream.ts';
import { isContainer, type PyValue } from './pickle/values.ts';
import { torchIdentifier } from './format/identify.ts';
import { npyPickleOffset } from './scan-npy.ts';
import type { CapturedRun, PickleCapture } from './torch/captured.ts';
import { objectMode } from './torch/extract-objects.ts';
import { dtypeInfo } from './torch/dtypes.ts';
import { LEGACY_MAGIC } from './torch/legacy-format.ts';
import { StorageTable } from './torch/persistent.ts';
import { isTarHeader, tarMembers } from './torch/tar.ts';
import { torchLayout } from './torch/zip-names.ts';

/**
 * What a pickle would make Python import and call, found by interpreting it (not by pattern
 * matching), so memo tricks, STACK_GLOBAL indirection and junk after STOP cannot hide a name.
 * `safe` means: nothing to refuse (only allowlisted globals, well-formed within the limits).
 */
export interface ScanReport {
  safe: boolean;
  /**
   * `safe`: pickles found, only allowlisted globals, no findings. `unsafe`: any finding.
   * `no-pickle`: nothing a pickle loader would import or call (safetensors, GGUF, ONNX, HDF5, a
   * numeric npz or .npy, an empty file): `safe` is true, `pickles` is 0. `not-a-pickle`: bytes of no
   * format tensorport knows that do not parse as a pickle either (random bytes, a PNG): nothing
   * to vouch for, so `safe` is false, with the parse failure as the one finding.
   */
  verdict: 'safe' | 'unsafe' | 'no-pickle' | 'not-a-pickle';
  /** For `no-pickle` files that are not ZIPs or .npy: the format `identify` named (`safetensors`, `gguf`…). */
  kind?: string;
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
  /**
   * Names a file that is not a pickle (its `kind` says whether it is a format with none). The
   * `tensorport` library passes the `identify` it assembles from every format package; the
   * default knows torch's kinds and core's (safetensors, HDF5, ONNX, JSON…), not GGUF.
   */
  identify?: (source: ByteSource) => Promise<{ kind: string }>;
}

const OWN_IDENTIFIERS = [torchIdentifier, ...CORE_IDENTIFIERS];

/** Findings listed per report; a pickle naming a million distinct globals gets a count beyond it. */
const MAX_FINDINGS = 1000;
/** Containers inside containers scanned (a ZIP appended to a legacy stream): deeper is a finding. */
const MAX_DEPTH = 3;

class Report {
  readonly globals = new Set<string>();
  readonly findings: Finding[] = [];
  readonly opcodes: Record<string, number> = Object.create(null) as Record<string, number>;
  pickles = 0;
  /** The file is neither a pickle nor a format we know; its findings are the parse failure. */
  unrecognised = false;
  kind: string | undefined;
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
  finding(f: Finding): void {
    if (this.findings.length < MAX_FINDINGS) this.findings.push(f);
    else this.unlisted++;
  }
  done(format: ScanReport['format']): ScanReport {
    const findings = this.unlisted > 0 ? [...this.findings, { code: 'PickleLimitExceeded', message: `${this.unlisted} more findings not listed` }] : this.findings;
    const verdict = this.unrecognised ? 'not-a-pickle' : findings.length > 0 ? 'unsafe' : this.pickles > 0 ? 'safe' : 'no-pickle';
    return {
      safe: findings.length === 0, verdict, ...(verdict === 'no-pickle' && this.kind ? { kind: this.kind } : {}),
      format, globals: [...this.globals], findings, opcodes: this.opcodes, pickles: this.pickles,
    };
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

/** Formats `identify` names that hold no pickle (ZIPs and .npy are scanned member by member instead). */
const NOT_PICKLES = new Set(['safetensors', 'safetensors-index', 'torch-index', 'mlx-quantized', 'fp8-block', 'gguf', 'hdf5', 'onnx', 'json', 'empty']);
/** GLOBAL, INST, STACK_GLOBAL, EXT1/2/4: an opcode that imports, even when its arguments are bad. */
const IMPORTING = new Set([0x63, 0x69, 0x93, 0x82, 0x83, 0x84]);

/**
 * Whether bytes that are not declared a pickle (by name or a PROTO opcode) are one for this
 * purpose: CPython's unpickler imports nothing before the first GLOBAL-like opcode, so a run that
 * fails before one (safetensors, GGUF, HDF5, random bytes) holds no pickle. A run counts when it
 * reached STOP, referenced a global, failed on an importing opcode, or hit a limit (beyond which
 * we cannot see, and CPython can).
 */
function isPickle(r: RunResult, opcodeAtFailure: number | undefined): boolean {
  if (r.value !== undefined || r.globals.length > 0) return true;
  if (r.findings.some((f) => f.code === 'PickleLimitExceeded')) return true;
  return opcodeAtFailure !== undefined && IMPORTING.has(opcodeAtFailure);
}

export interface CheckpointScanOptions extends ScanOptions {
  /** Lets the scan read deflated ZIP members. */
  zipCodec?: DeflateCodec;
  /** The source's ZIP directory when the caller parsed it already (one parse for the scan and the reader). */
  archive?: ZipArchive;
  /**
   * Run the pickles a reader assembles (a torch ZIP's data.pkl, a legacy stream's five) in the
   * reader's configuration and leave their values here, so an open runs each pickle once.
   */
  capture?: PickleCapture;
}

/**
 * Scans a checkpoint the way its loaders read it, never executing anything: every ZIP member that
 * is a pickle or an object `.npy` (torch archives, npz; TorchScript markers and names that differ
 * only in case are findings), a tar torch would read first, the five pickles of a legacy torch
 * file and what follows its storages, a `.npy`'s pickle if its dtype holds objects, or a bare
 * pickle stream. A structural error becomes a finding; a file with no pickle has verdict `no-pickle`.
 */
export async function scanCheckpoint(input: ByteSource | Uint8Array, opts: CheckpointScanOptions = {}): Promise<ScanReport> {
  const source = input instanceof Uint8Array ? new BytesSource(input, opts.path) : input;
  const report = new Report();
  const format = await scanSource(source, report, opts, 0);
  return report.done(format);
}

async function scanSource(source: ByteSource, report: Report, opts: CheckpointScanOptions, depth: number): Promise<ScanReport['format']> {
  const head = await source.read(0, Math.min(source.size, 512));
  const zip = startsWithMagic(head, ZIP_LOCAL_MAGIC);
  try {
    if (zip) {
      await scanZip(source, report, opts);
      return 'torch-zip';
    }
    if (startsWithNpyMagic(head)) {
      const name = opts.path ?? source.name;
      const at = npyPickleOffset(await npyHeader((n) => source.read(0, Math.min(n, source.size))), name);
      if (at !== null) scanStream(await readAll(source, opts), at, report, { ...opts, path: name });
      return 'pickle';
    }
    if (isTarHeader(head)) await scanTar(source, report, opts);
    return (await scanPickleStream(source, report, opts, depth)) ? 'torch-legacy' : 'pickle';
  } catch (e) {
    report.fail(e);
    return zip ? 'torch-zip' : 'pickle';
  }
}

/**
 * torch.load reads any non-ZIP file whose first block is a tar header with its tar loader, which
 * unpickles the `storages`, `tensors` and `pickle` members: a finding, and their first pickles
 * are scanned so the report names what they import.
 */
async function scanTar(source: ByteSource, report: Report, opts: ScanOptions): Promise<void> {
  const name = opts.path ?? source.name;
  report.finding({ code: 'TorchUnsupportedArchive', message: `${name}: its first 512 bytes are a tar header, so torch.load reads it with the pre-0.4 tar loader (which unpickles the tar's members), not as what follows`, offset: 0, path: name });
  const image = await source.read(0, Math.min(source.size, 16 << 20));
  for (const m of tarMembers(image)) {
    if (!['storages', 'tensors', 'pickle'].includes(m.name) || m.offset + m.size > image.byteLength) continue;
    report.add(runPickle(image.subarray(m.offset, m.offset + m.size), 0, { mode: 'scan', persistentLoad: new StorageTable('any').load, ...optional(opts), path: `${name}:${m.name}` }));
  }
}

/**
 * Pickles back to back from offset 0; after a legacy magic number, only the five torch writes,
 * then the storages they describe: anything after those is trailing data, a finding, and is
 * scanned as a file of its own (a ZIP appended to a legacy stream is read by zipfile-based tools).
 */
async function scanPickleStream(source: ByteSource, report: Report, opts: CheckpointScanOptions, depth: number): Promise<boolean> {
  const storages = new StorageTable('any');
  const name = opts.path ?? source.name;
  const capture = depth === 0 ? opts.capture : undefined;
  const runs: CapturedRun[] = [];
  // the object pickle's storages, when it runs as the legacy reader runs it
  let objectStorages: StorageTable | undefined;
  let pos = 0;
  let legacy = false;
  let n = 0;
  let keys: PyValue | undefined;
  while (pos < source.size && !(legacy && n === 5)) {
    const capturing = capture !== undefined && legacy && n === 3;
    const table = capturing ? (objectStorages = new StorageTable('legacy', true)) : storages;
    const r = await runPickleAt(source, pos, {
      mode: 'scan', persistentLoad: table.load, ...optional(opts), path: name,
      ...(opts.maxPickleBytes ? { maxPickleBytes: opts.maxPickleBytes } : {}),
      ...(capturing ? objectMode(capture) : {}),
    });
    if (r.value === undefined && n === 0) {
      const failedAt = r.findings.at(-1)?.offset;
      const op = typeof failedAt === 'number' && failedAt < source.size ? (await source.read(failedAt, 1))[0] : undefined;
      // a PROTO opcode declares a pickle: a broken one is unsafe; other bytes may be another format
      if (!isPickle(r, op) && (await source.read(0, 1))[0] !== PROTO) {
        const kind = await (opts.identify ?? ((s: ByteSource) => identifyWith(OWN_IDENTIFIERS, s)))(source).then((i) => i.kind, () => 'unknown');
        if (NOT_PICKLES.has(kind)) {
          report.kind = kind;
          return false;
        }
        report.unrecognised = report.findings.length === 0;
        for (const f of r.findings) report.finding(f);
        return false;
      }
    }
    if (r.value === undefined && n > 0 && (await trailing(source, pos, report, opts, depth, `after the pickle that ends at ${pos}`))) return legacy;
    report.add(r);
    n++;
    if (r.value === undefined) return legacy;
    runs.push({ value: r.value, end: r.end, globals: r.globals });
    if (n === 1 && r.value === LEGACY_MAGIC) legacy = true;
    if (n === 5) keys = r.value;
    pos = r.end;
  }
  if (legacy && n === 5) {
    if (capture && objectStorages) capture.pickles = { runs, storages: objectStorages };
    const end = await legacyStorages(source, pos, objectStorages ?? storages, keys);
    if (end !== null && end < source.size) await trailing(source, end, report, opts, depth, 'after the last storage', true);
    if (end === null) report.finding({ code: 'TorchInvalidCheckpoint', message: `${name}: the storage records after the pickles do not match what the pickles declare`, offset: pos, path: name });
  }
  return legacy;
}

/**
 * Bytes at `at` that are not the next pickle: a container (ZIP, .npy, tar) is a finding and is
 * scanned; anything else is left to the pickle run's own finding (returns false), unless `always`.
 */
async function trailing(source: ByteSource, at: number, report: Report, opts: CheckpointScanOptions, depth: number, where: string, always = false): Promise<boolean> {
  const head = await source.read(at, Math.min(source.size - at, 512));
  const kind = startsWithMagic(head, ZIP_LOCAL_MAGIC) ? 'a ZIP archive' : startsWithNpyMagic(head) ? 'a .npy array' : isTarHeader(head) ? 'a tar archive' : null;
  if (kind === null && !always) return false;
  const name = opts.path ?? source.name;
  report.finding({
    code: 'TorchInvalidCheckpoint',
    message: `${name}: ${source.size - at} bytes ${where}${kind ? ` (${kind}, scanned)` : ''}: torch.load ignores them, other loaders may not`,
    offset: at, path: name,
  });
  if (depth + 1 >= MAX_DEPTH) return true;
  const inner = new SliceSource(source, at, source.size - at, `${name}@${at}`);
  const { capture: _outer, ...rest } = opts;
  await scanSource(inner, report, { ...rest, path: `${name}@${at}` }, depth + 1);
  return true;
}

/** The legacy storage records (int64 element count, then the elements) in key order; where they end, or null. */
async function legacyStorages(source: ByteSource, start: number, table: StorageTable, keys: PyValue | undefined): Promise<number | null> {
  if (keys === undefined || !isContainer(keys) || keys.kind !== 'list') return null;
  let pos = start;
  for (const key of keys.items) {
    const ref = typeof key === 'string' ? table.storages.get(key) : undefined;
    if (ref === undefined || pos + 8 > source.size) return null;
    const head = await source.read(pos, 8);
    const numel = new DataView(head.buffer, head.byteOffset, 8).getBigUint64(0, true);
    if (numel !== BigInt(ref.numel)) return null;
    pos += 8 + ref.numel * (ref.dtype === null ? 1 : dtypeInfo(ref.dtype).bytes);
    if (pos > source.size) return null;
  }
  return pos;
}

async function scanZip(source: ByteSource, report: Report, opts: CheckpointScanOptions): Promise<void> {
  const zip = opts.archive ?? (await openZip(source, opts.zipCodec ? { codec: opts.zipCodec } : {}));
  const layout = torchLayout(zip);
  const name = opts.path ?? source.name;
  for (const f of layout.findings) report.finding({ ...f, path: f.path ?? name });
  const dataPkl = opts.capture && layout.torch ? layout.get('data.pkl') : undefined;
  const members = zip.entries.filter((e) => !e.name.endsWith('/'));
  // Every member's first bytes, storages included (numpy would unpickle a storage that is a .npy),
  // read ahead: one awaited read per member was most of a 10,000-tensor checkpoint's scan.
  for await (const [e, first] of readInOrder(members, (m) => zip.readPrefix(m, 6))) {
    const npy = startsWithNpyMagic(first);
    // torch reads its storages as raw numbers; numpy would still read one that is a .npy
    if (!npy && layout.isStorage(e)) continue;
    await scanMember(zip, e, first, npy, report, opts, e === dataPkl ? opts.capture : undefined);
  }
}

/**
 * data.pkl run as the ZIP reader runs it (its storage layout, its mode's resolver), in scan mode:
 * with no finding its value is the reader's. Pickles after its STOP are scanned as any member's.
 */
function captureMember(bytes: Uint8Array, report: Report, opts: ScanOptions, capture: PickleCapture): void {
  const storages = new StorageTable('zip', true);
  const r = runPickle(bytes, 0, { mode: 'scan', persistentLoad: storages.load, ...optional(opts), ...objectMode(capture) });
  report.add(r);
  if (r.value === undefined) return;
  capture.pickles = { runs: [{ value: r.value, end: r.end, globals: r.globals }], storages, memberBytes: bytes.byteLength };
  if (r.end < bytes.length) scanStream(bytes, r.end, report, opts);
}

async function scanMember(zip: ZipArchive, e: ZipEntry, first: Uint8Array, npy: boolean, report: Report, opts: CheckpointScanOptions, capture?: PickleCapture): Promise<void> {
  const max = opts.maxPickleBytes ?? DEFAULT_MAX_PICKLE_BYTES;
  const memberOpts = { ...opts, path: e.name };
  if (npy) {
    const at = npyPickleOffset(await npyHeader((n) => zip.readPrefix(e, n)), e.name);
    if (at === null) return;
    if (e.uncompressedSize > max) throw new TensorportError('PickleLimitExceeded', `${e.name} is ${e.uncompressedSize} bytes; the limit is ${max} (option maxPickleBytes)`, { path: e.name });
    scanStream(await zip.readPrefix(e, e.uncompressedSize), at, report, memberOpts);
    return;
  }
  const declared = /\.pkl$/i.test(e.name) || first[0] === PROTO;
  if (!declared) {
    // most members that are not pickles fail on their first bytes: look at a prefix before reading it all
    const window = await zip.readPrefix(e, Math.min(e.uncompressedSize, 64 * 1024, max));
    const r = runPickle(window, 0, { mode: 'scan', persistentLoad: new StorageTable('any').load, ...optional(memberOpts), streamLength: Math.min(e.uncompressedSize, max), streamCapped: e.uncompressedSize > max });
    const failedAt = r.findings.at(-1)?.offset;
    if (!r.truncated && !isPickle(r, typeof failedAt === 'number' ? window[failedAt] : undefined)) return;
  }
  if (e.uncompressedSize > max) throw new TensorportError('PickleLimitExceeded', `${e.name} is ${e.uncompressedSize} bytes; the limit is ${max} (option maxPickleBytes)`, { path: e.name });
  const bytes = await zip.readPrefix(e, e.uncompressedSize);
  if (capture) captureMember(bytes, report, memberOpts, capture);
  else scanStream(bytes, 0, report, memberOpts);
}

/** numpy's allow_pickle load has no header size limit; ours is 1 MiB (a longer header is a finding). */
const MAX_NPY_HEADER = 1 << 20;

/** The header of a .npy (magic through the header dict), read through `read(length)`: the data only if it is a pickle. */
async function npyHeader(read: (length: number) => Promise<Uint8Array>): Promise<Uint8Array> {
  const first = await read(256);
  if (first.byteLength < 12) return first;
  const len = first[6] === 1 ? 10 + (first[8]! | (first[9]! << 8)) : 12 + new DataView(first.buffer, first.byteOffset).getUint32(8, true);
  return len <= first.byteLength ? first : read(Math.min(len, MAX_NPY_HEADER));
}

async function readAll(source: ByteSource, opts: ScanOptions): Promise<Uint8Array> {
  const max = opts.maxPickleBytes ?? DEFAULT_MAX_PICKLE_BYTES;
  if (source.size > max) throw new TensorportError('PickleLimitExceeded', `${source.name} is ${source.size} bytes; the limit is ${max} (option maxPickleBytes)`, { path: source.name });
  return source.read(0, source.size);
}
