import type { Finding } from '../errors.ts';
import { TensorportError } from '../errors.ts';
import type { ByteSource } from '../io/source.ts';
import { MAX_HEADER_SIZE, parseHeaderBytes } from '../safetensors/header.ts';
import type { DeflateCodec } from '../zip/codec.ts';
import { openZip } from '../zip/reader.ts';
import { detectFormat } from '../detect.ts';
import { KINDS, type IdentifiedKind } from './kinds.ts';
import { looksLikeFlaxMsgpack } from './msgpack.ts';
import { looksLikeOnnx } from './onnx.ts';
import { npyDescr, quantizedPairs, zipKind } from './zip-kinds.ts';

export interface Identification {
  kind: IdentifiedKind;
  /** What the file is, in words. */
  what: string;
  /** What tensorport can do with it. */
  can: string;
  /** For MLX quantized weights: the container ('safetensors' or 'npz'). */
  container?: 'safetensors' | 'npz';
  /** ZIPs whose central directory was read: the member names, in directory order. */
  members?: readonly string[];
  /** Facts read on the way (GGUF version and counts, ZIP member count, ONNX ir_version…). */
  details: Record<string, string | number>;
  /** ExtensionMismatch when the name's extension disagrees with the bytes; damaged structures. */
  warnings: Finding[];
  /** Bytes read to decide (distinct ranges, summed). */
  bytesRead: number;
}

export interface IdentifyOptions {
  /** Lets an MLX .npz's deflated weight header be read; without it member names decide. */
  codec?: DeflateCodec;
  /** Largest safetensors header read to look for MLX quantization (default 16 MiB). */
  maxHeaderBytes?: number;
}

/** HDF5's superblock may sit at 0, 512, 1024, 2048… (a user block before it); checked up to 1 MiB. */
const HDF5_MAGIC = [0x89, 0x48, 0x44, 0x46, 0x0d, 0x0a, 0x1a, 0x0a];
const HDF5_LAST_OFFSET = 1024 * 1024;
const HEAD_BYTES = 4096;
/** An index file's weight_map comes after a small metadata object: looked for in the first 64 KiB. */
const INDEX_WINDOW = 64 * 1024;

class CountingReader {
  bytesRead = 0;
  constructor(readonly source: ByteSource) {}
  async read(offset: number, length: number): Promise<Uint8Array> {
    const n = Math.max(0, Math.min(length, this.source.size - offset));
    this.bytesRead += n;
    return n === 0 ? new Uint8Array(0) : this.source.read(offset, n);
  }
}

/**
 * Names a file's format from its bytes (never from its name), reading a few KB: magic numbers,
 * the safetensors header, a ZIP's central directory names. The name's extension is only compared
 * afterwards, for a warning.
 */
export async function identify(source: ByteSource, options: IdentifyOptions = {}): Promise<Identification> {
  const r = new CountingReader(source);
  const details: Record<string, string | number> = {};
  const warnings: Finding[] = [];
  const zip: { members?: readonly string[] } = {};
  const { kind, container } = await classify(r, details, warnings, options, zip);
  const info = KINDS[kind];
  const ext = extensionOf(source.name);
  if (ext && info.extensions.length > 0 && !info.extensions.some((e) => source.name.toLowerCase().endsWith(e))) {
    warnings.push({
      code: 'ExtensionMismatch',
      message: `${source.name} has the extension '${ext}' (${extensionMeaning(ext)}) but its bytes are ${info.what}`,
      path: source.name,
    });
  }
  return { kind, what: info.what, can: info.can, ...(container ? { container } : {}), ...zip, details, warnings, bytesRead: r.bytesRead };
}

function extensionOf(name: string): string {
  const base = name.slice(name.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(dot).toLowerCase() : '';
}

function extensionMeaning(ext: string): string {
  if (ext === '.mlx') return 'usually a MATLAB Live Script';
  const owner = (Object.keys(KINDS) as IdentifiedKind[]).find((k) => KINDS[k].extensions.includes(ext));
  return owner ? `usually ${KINDS[owner].what}` : 'no format tensorport knows';
}

interface Classified {
  kind: IdentifiedKind;
  container?: 'safetensors' | 'npz';
}

async function classify(
  r: CountingReader,
  details: Record<string, string | number>,
  warnings: Finding[],
  options: IdentifyOptions,
  zip: { members?: readonly string[] },
): Promise<Classified> {
  const size = r.source.size;
  if (size === 0) return { kind: 'empty' };
  const head = await r.read(0, HEAD_BYTES);
  const coarse = detectFormat(head, size);
  switch (coarse) {
    case 'zip':
      return classifyZip(r, details, warnings, options, zip);
    case 'npy':
      return { kind: 'npy' };
    case 'hdf5':
      return { kind: 'hdf5' };
    case 'gguf':
      return ggufHeader(head, details);
    case 'pickle':
      return { kind: isLegacyTorch(head) ? 'torch-legacy' : 'pickle' };
    case 'safetensors':
      return classifySafetensors(r, head, details, warnings, options);
    case 'json':
      return { kind: await shardIndexKind(r, head) };
    default:
      break;
  }
  if (head[0] === 0x80 && head[1] !== undefined && head[1] <= 5) return { kind: 'pickle' };
  const flax = looksLikeFlaxMsgpack(head);
  if (flax) {
    details.entries = flax.entries;
    details.firstKey = flax.firstKey;
    return { kind: 'flax-msgpack' };
  }
  const onnx = looksLikeOnnx(head, size);
  if (onnx) {
    details.irVersion = onnx.irVersion;
    if (onnx.producer !== undefined) details.producer = onnx.producer;
    return { kind: 'onnx' };
  }
  if (await hdf5AtUserBlock(r, details)) return { kind: 'hdf5' };
  return { kind: 'unknown' };
}

/** PROTO 2, LONG1 of 10 bytes: the magic number 0x1950a86a20f9469cfc6c torch's legacy save writes first. */
const LEGACY_TORCH = [0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19];

function isLegacyTorch(head: Uint8Array): boolean {
  return LEGACY_TORCH.every((b, i) => head[i] === b);
}

/** GGUF header: magic, u32 version, u64 tensor_count, u64 metadata_kv_count, little-endian. */
function ggufHeader(head: Uint8Array, details: Record<string, string | number>): Classified {
  if (head.length >= 24) {
    const v = new DataView(head.buffer, head.byteOffset, head.byteLength);
    details.version = v.getUint32(4, true);
    details.tensorCount = v.getBigUint64(8, true).toString();
    details.kvCount = v.getBigUint64(16, true).toString();
  }
  return { kind: 'gguf' };
}

async function hdf5AtUserBlock(r: CountingReader, details: Record<string, string | number>): Promise<boolean> {
  for (let at = 512; at <= HDF5_LAST_OFFSET && at + 8 <= r.source.size; at *= 2) {
    const b = await r.read(at, 8);
    if (HDF5_MAGIC.every((m, i) => b[i] === m)) {
      details.superblockOffset = at;
      return true;
    }
  }
  return false;
}

/** A shard index: `"weight_map"` in the window; torch's when its shards are `.bin` files. */
async function shardIndexKind(r: CountingReader, head: Uint8Array): Promise<IdentifiedKind> {
  const window = head.length >= Math.min(INDEX_WINDOW, r.source.size) ? head : await r.read(0, INDEX_WINDOW);
  const text = new TextDecoder('utf-8', { fatal: false }).decode(window);
  if (!text.includes('"weight_map"')) return 'json';
  return /\.bin"/.test(text) && !/\.safetensors"/.test(text) ? 'torch-index' : 'safetensors-index';
}

async function classifySafetensors(
  r: CountingReader,
  head: Uint8Array,
  details: Record<string, string | number>,
  warnings: Finding[],
  options: IdentifyOptions,
): Promise<Classified> {
  const n = Number(new DataView(head.buffer, head.byteOffset, 8).getBigUint64(0, true));
  details.headerBytes = n;
  if (n > (options.maxHeaderBytes ?? 16 * 1024 * 1024) || n > MAX_HEADER_SIZE) return { kind: 'safetensors' };
  const bytes = n + 8 <= head.length ? head.subarray(8, 8 + n) : await r.read(8, n);
  try {
    const header = parseHeaderBytes(bytes, r.source.size, n);
    details.tensors = header.tensors.length;
    const u32 = new Set(header.tensors.filter((t) => t.dtype === 'U32').map((t) => t.name));
    const pairs = quantizedPairs(header.tensors.map((t) => t.name)).filter((w) => u32.has(w));
    if (header.metadata?.get('format') === 'mlx' || pairs.length > 0) {
      details.quantizedLayers = pairs.length;
      return { kind: 'mlx-quantized', container: 'safetensors' };
    }
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
    warnings.push({ code: e.code, message: `the safetensors header is invalid: ${e.message}`, path: r.source.name });
  }
  return { kind: 'safetensors' };
}

async function classifyZip(
  r: CountingReader,
  details: Record<string, string | number>,
  warnings: Finding[],
  options: IdentifyOptions,
  out: { members?: readonly string[] },
): Promise<Classified> {
  let zip;
  try {
    zip = await openZip(countingSource(r), options.codec ? { codec: options.codec } : {});
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
    warnings.push({ code: e.code, message: `the ZIP structure is unreadable: ${e.message}`, path: r.source.name });
    return { kind: 'zip' };
  }
  const names = zip.entries.map((e) => e.name);
  out.members = names;
  details.members = names.length;
  const kind = zipKind(names);
  if (kind !== 'npz') return { kind };
  const pairs = quantizedPairs(names, '.npy');
  if (pairs.length === 0) return { kind };
  // MLX packs quantized weights as uint32; an fp model that happens to have `.scales` is not MLX.
  const descr = await npyDescr(zip, pairs[0]!);
  if (descr !== null && !/^[<|=]?u4$/.test(descr)) return { kind };
  details.quantizedLayers = pairs.length;
  return { kind: 'mlx-quantized', container: 'npz' };
}

/** The same source, its reads counted (openZip reads through it). Closing is the caller's business. */
function countingSource(r: CountingReader): ByteSource {
  const s = r.source;
  return {
    name: s.name,
    size: s.size,
    read: (o, l) => {
      r.bytesRead += l;
      return s.read(o, l);
    },
    close: async () => undefined,
    get bytesRead() {
      return r.bytesRead;
    },
  };
}
