import { checkRange, openZip, TensorportError, type ByteSource, type DeflateCodec, type ZipArchive, type ZipEntry } from '@tensorport/core';
import { bytesAfterStop, loadPickle } from '../pickle/interpreter.ts';
import type { PyValue, StorageRef } from '../pickle/values.ts';
import { DEFAULT_MAX_PICKLE_BYTES } from '../pickle/stream.ts';
import { type AssembleOptions, type TorchCheckpoint } from './assemble.ts';
import type { CapturedPickles } from './captured.ts';
import { assembleObjects, objectMode } from './extract-objects.ts';
import { dtypeInfo } from './dtypes.ts';
import type { StorageBytes } from './layout.ts';
import type { PickleReadOptions } from './legacy-format.ts';
import { StorageTable } from './persistent.ts';
import { torchLayout, type TorchLayout } from './zip-names.ts';

/**
 * `torch.save` ZIP checkpoints (torch >= 1.6): every member under one top-level directory, named
 * after the first entry (never assume `archive/`): `data.pkl`, `data/<key>` per storage (stored,
 * 64-byte aligned), `version` (or `.data/version`, 1..10), optional `byteorder` (`little`/`big`;
 * missing means little) and `.data/serialization_id`. A `constants.pkl` makes it TorchScript.
 */
export interface ZipCheckpointOptions extends AssembleOptions, PickleReadOptions {
  /** Only for deflated `data.pkl` members (torch writes them stored). */
  zipCodec?: DeflateCodec;
  /** The source's ZIP directory when the caller parsed it already (a Context shares one parse with the scan). */
  archive?: ZipArchive;
}

export interface TorchArchive {
  readonly zip: ZipArchive;
  readonly prefix: string;
  /** Members as torch looks them up: ASCII case folded. */
  readonly layout: TorchLayout;
}

/** The member torch reads for `name` (`<prefix>/…`), compared as torch compares: ignoring ASCII case. */
function member(a: TorchArchive, name: string): ZipEntry | undefined {
  return a.layout.get(name.slice(a.prefix.length + 1));
}

function invalid(source: ByteSource, message: string): TensorportError {
  return new TensorportError('TorchInvalidCheckpoint', `${source.name}: ${message}`, { path: source.name });
}

/** The archive prefix and layout checks torch's reader makes (caffe2 inline_container.cc). */
async function openTorchArchive(source: ByteSource, codec?: DeflateCodec, archive?: ZipArchive): Promise<TorchArchive> {
  const zip = archive ?? (await openZip(source, codec ? { codec } : {}));
  const first = zip.entries[0];
  if (first === undefined) throw invalid(source, 'empty archive');
  const slash = first.name.indexOf('/');
  if (slash <= 0) throw invalid(source, `member ${JSON.stringify(first.name)} is not in a subdirectory`);
  const prefix = first.name.slice(0, slash);
  for (const e of zip.entries) {
    if (!e.name.startsWith(`${prefix}/`)) throw invalid(source, `member ${JSON.stringify(e.name)} is outside the archive directory ${JSON.stringify(prefix)}`);
  }
  const layout = torchLayout(zip);
  // two names torch cannot tell apart, or TorchScript markers: refused as the scan reports them
  const refusal = layout.findings[0];
  if (refusal) throw new TensorportError(refusal.code as 'ZipDuplicateName', `${source.name}: ${refusal.message}`, { path: source.name });
  return { zip, prefix, layout };
}

async function readMember(a: TorchArchive, name: string, max: number): Promise<Uint8Array> {
  const e = member(a, name)!;
  if (e.uncompressedSize > max) {
    throw new TensorportError('PickleLimitExceeded', `${name} is ${e.uncompressedSize} bytes; the limit is ${max} (option maxPickleBytes)`, { path: name });
  }
  const bytes = await a.zip.readPrefix(e, e.uncompressedSize);
  if (bytes.byteLength !== e.uncompressedSize) throw new TensorportError('TorchInvalidCheckpoint', `${name} is shorter than its directory entry says`, { path: name });
  return bytes;
}

async function readSmall(a: TorchArchive, name: string): Promise<string | null> {
  const e = member(a, name);
  if (!e) return null;
  if (e.uncompressedSize > 64) throw invalid(a.zip.source, `${name} is ${e.uncompressedSize} bytes, expected a short text record`);
  return new TextDecoder().decode(await readMember(a, name, 64));
}

export async function openZipCheckpoint(source: ByteSource, opts: ZipCheckpointOptions): Promise<TorchCheckpoint> {
  const a = await openTorchArchive(source, opts.zipCodec, opts.archive);
  const p = a.prefix;
  const version = (await readSmall(a, `${p}/version`)) ?? (await readSmall(a, `${p}/.data/version`));
  if (version === null) throw invalid(source, 'no version record');
  const v = /^\s*([0-9]+)\s*$/.exec(version);
  if (!v || Number(v[1]) < 1 || Number(v[1]) > 10) throw invalid(source, `unsupported format version ${JSON.stringify(version.slice(0, 20))} (torch reads 1 to 10)`);
  const byteorder = (await readSmall(a, `${p}/byteorder`)) ?? 'little';
  if (byteorder !== 'little' && byteorder !== 'big') throw invalid(source, `byteorder record is ${JSON.stringify(byteorder)}, expected little or big`);
  if (!member(a, `${p}/data.pkl`)) throw invalid(source, `no ${p}/data.pkl`);

  const { table, r } = opts.captured ? fromCapture(a, opts.captured) : await runDataPickle(a, opts);

  // Every storage's declared size against its member, before any tensor is described: torch
  // itself reads past short records and allocates whatever a long declaration says.
  const bigEndian = byteorder === 'big';
  // Deflated storages are kept (each inflates through one reader); a stored one is a window made
  // when a tensor asks for it, not a map of 100,000 windows.
  const deflated = new Map<string, StorageBytes>();
  let anyDeflated = false;
  for (const [key, ref] of table.storages) {
    const name = `${p}/data/${key}`;
    const e = member(a, name);
    if (!e) throw invalid(source, `storage ${key} has no member ${name}`);
    const want = ref.numel * (ref.dtype === null ? 1 : dtypeInfo(ref.dtype).bytes);
    if (e.uncompressedSize !== want) {
      throw new TensorportError('TorchStorageMismatch', `${source.name}: storage ${key} declares ${ref.numel} × ${ref.dtype ?? 'byte'} = ${want} bytes, its member holds ${e.uncompressedSize}`, { path: name });
    }
    if (!e.stored && !opts.zipCodec) {
      throw new TensorportError('TorchUnsupportedArchive', `${source.name}: storage member ${name} is deflated; pass zipCodec to read it`, { path: name });
    }
    if (!e.stored) {
      deflated.set(key, inflated(a.zip, e, bigEndian));
      anyDeflated = true;
    }
  }
  const warnings = bigEndian ? [{ code: 'TorchBigEndian', message: 'storages are big-endian (byteorder record); swapped to little-endian' }] : [];
  if (anyDeflated) warnings.push({ code: 'TorchDeflatedStorage', message: 'storages are deflated (torch writes them stored): read by inflating, not memory-mapped' });
  const resolve = (ref: StorageRef): StorageBytes => deflated.get(ref.key) ?? { source: a.zip.storedSource(member(a, `${p}/data/${ref.key}`)!), bigEndian };
  return assembleObjects(r.value, r.globals, resolve, opts, {
    format: 'torch-zip', globals: r.globals, warnings, close: () => a.zip.close(),
  });
}

async function runDataPickle(a: TorchArchive, opts: ZipCheckpointOptions): Promise<{ table: StorageTable; r: { value: PyValue; globals: string[] } }> {
  const pkl = await readMember(a, `${a.prefix}/data.pkl`, opts.maxPickleBytes ?? DEFAULT_MAX_PICKLE_BYTES);
  const table = new StorageTable('zip');
  const r = loadPickle(pkl, { persistentLoad: table.load, path: `${a.prefix}/data.pkl`, ...(opts.limits ? { limits: opts.limits } : {}), ...objectMode(opts) });
  return { table, r };
}

/** data.pkl as the scan ran it, with the refusals loading it would have made (readMember, loadPickle). */
function fromCapture(a: TorchArchive, c: CapturedPickles): { table: StorageTable; r: { value: PyValue; globals: string[] } } {
  const name = `${a.prefix}/data.pkl`;
  const run = c.runs[0]!;
  if (c.memberBytes !== member(a, name)!.uncompressedSize) throw new TensorportError('TorchInvalidCheckpoint', `${name} is shorter than its directory entry says`, { path: name });
  if (c.storages.deferred) throw c.storages.deferred;
  if (run.end !== c.memberBytes) throw bytesAfterStop(c.memberBytes, run.end, { path: name });
  return { table: c.storages, r: run };
}

/**
 * A deflated storage member (torch accepts them; a re-zipping tool makes them): inflated from its
 * start for every access, never held whole. The core ZIP reader stops inflating at the declared
 * size, so a bomb costs no more than the member claims.
 */
function inflated(zip: ZipArchive, e: ZipEntry, bigEndian: boolean): StorageBytes {
  async function* stream(offset: number, length: number): AsyncGenerator<Uint8Array> {
    let pos = 0;
    const end = offset + length;
    if (length === 0) return;
    for await (const c of zip.stream(e, { verify: false })) {
      const from = Math.max(offset, pos);
      const to = Math.min(end, pos + c.byteLength);
      if (from < to) yield c.subarray(from - pos, to - pos);
      pos += c.byteLength;
      if (pos >= end) return;
    }
  }
  const source: ByteSource = {
    size: e.uncompressedSize,
    name: `${zip.source.name}:${e.name}`,
    get bytesRead() { return zip.source.bytesRead; },
    async read(offset, length) {
      checkRange(this, offset, length);
      const out = new Uint8Array(length);
      let n = 0;
      for await (const c of stream(offset, length)) {
        out.set(c, n);
        n += c.byteLength;
      }
      if (n !== length) throw new TensorportError('TorchInvalidCheckpoint', `${e.name} inflates to fewer bytes than its directory entry says`, { path: e.name });
      return out;
    },
    async close() {},
  };
  return { source, stream, bigEndian };
}
