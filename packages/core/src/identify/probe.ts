import { detectFormat } from '../detect.ts';
import type { Finding } from '../errors.ts';
import { TensorportError } from '../errors.ts';
import type { ByteSource } from '../io/source.ts';
import { MAX_HEADER_SIZE, parseHeaderBytes, type SafetensorsHeader } from '../safetensors/header.ts';
import { openZip, type ZipArchive } from '../zip/reader.ts';
import type { IdentifyOptions, IdentifyProbe } from './types.ts';

const HEAD_BYTES = 4096;
/** An index file's weight_map comes after a small metadata object: looked for in the first 64 KiB. */
const INDEX_WINDOW = 64 * 1024;

/** A probe over `source`: every read counted, the ZIP directory and safetensors header parsed at most once. */
export async function createProbe(source: ByteSource, options: IdentifyOptions): Promise<IdentifyProbe & { bytesRead: number; members?: readonly string[] }> {
  let bytesRead = 0;
  const read = async (offset: number, length: number): Promise<Uint8Array> => {
    const n = Math.max(0, Math.min(length, source.size - offset));
    bytesRead += n;
    return n === 0 ? new Uint8Array(0) : source.read(offset, n);
  };
  const head = source.size === 0 ? new Uint8Array(0) : await read(0, HEAD_BYTES);
  const details: Record<string, string | number> = {};
  const warnings: Finding[] = [];
  let zip: Promise<ZipArchive | null> | undefined;
  let header: Promise<SafetensorsHeader | null> | undefined;
  const probe = {
    source, head, coarse: detectFormat(head, source.size), options, details, warnings, read,
    get bytesRead() {
      return bytesRead;
    },
    members: undefined as readonly string[] | undefined,
    zip: () => (zip ??= parseZip()),
    zipNames: async () => (await probe.zip())?.entries.map((e) => e.name) ?? null,
    safetensorsHeader: () => (header ??= parseSafetensors()),
    jsonWindow: async () => {
      const window = head.length >= Math.min(INDEX_WINDOW, source.size) ? head : await read(0, INDEX_WINDOW);
      return new TextDecoder('utf-8', { fatal: false }).decode(window);
    },
  };
  /** The same source, its reads counted (openZip reads through it). Closing is the caller's business. */
  const counted: ByteSource = {
    name: source.name,
    size: source.size,
    read: (o, l) => {
      bytesRead += l;
      return source.read(o, l);
    },
    close: async () => undefined,
    get bytesRead() {
      return bytesRead;
    },
  };
  async function parseZip(): Promise<ZipArchive | null> {
    if (probe.coarse !== 'zip') return null;
    try {
      const z = await openZip(counted, options.codec ? { codec: options.codec } : {});
      probe.members = z.entries.map((e) => e.name);
      details.members = z.entries.length;
      return z;
    } catch (e) {
      if (!(e instanceof TensorportError)) throw e;
      warnings.push({ code: e.code, message: `the ZIP structure is unreadable: ${e.message}`, path: source.name });
      return null;
    }
  }
  async function parseSafetensors(): Promise<SafetensorsHeader | null> {
    if (probe.coarse !== 'safetensors') return null;
    const n = Number(new DataView(head.buffer, head.byteOffset, 8).getBigUint64(0, true));
    details.headerBytes = n;
    if (n > (options.maxHeaderBytes ?? 16 * 1024 * 1024) || n > MAX_HEADER_SIZE) return null;
    const bytes = n + 8 <= head.length ? head.subarray(8, 8 + n) : await read(8, n);
    try {
      const parsed = parseHeaderBytes(bytes, source.size, n);
      details.tensors = parsed.tensors.length;
      return parsed;
    } catch (e) {
      if (!(e instanceof TensorportError)) throw e;
      warnings.push({ code: e.code, message: `the safetensors header is invalid: ${e.message}`, path: source.name });
      return null;
    }
  }
  return probe;
}
