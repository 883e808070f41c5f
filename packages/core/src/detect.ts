import type { ByteSource } from './io/source.ts';
import { MAX_HEADER_SIZE } from './safetensors/header.ts';

/**
 * What a file looks like from its first bytes, as far as core knows: its own containers (ZIP,
 * safetensors, JSON) and HDF5, which core's identify only names. Other formats' magic (.npy,
 * pickles, GGUF) belongs to their packages and is `unknown` here. A guess to pick a reader, not a
 * validation.
 */
export type DetectedFormat = 'safetensors' | 'zip' | 'hdf5' | 'json' | 'unknown';

/** How many leading bytes `detectFormat` looks at. */
export const DETECT_BYTES = 16;

/** Whether `head` begins with the bytes of `magic`. */
export function startsWithMagic(head: Uint8Array, magic: readonly number[] | Uint8Array): boolean {
  if (head.length < magic.length) return false;
  for (let i = 0; i < magic.length; i++) if (head[i] !== magic[i]) return false;
  return true;
}

/** "PK\3\4": a ZIP's first local file header. */
export const ZIP_LOCAL_MAGIC: readonly number[] = [0x50, 0x4b, 0x03, 0x04];
/** An empty archive is only an end-of-central-directory record. */
const ZIP_EMPTY_MAGIC = [0x50, 0x4b, 0x05, 0x06];
/** The HDF5 superblock signature ("\x89HDF\r\n\x1a\n"). */
export const HDF5_MAGIC: readonly number[] = [0x89, 0x48, 0x44, 0x46, 0x0d, 0x0a, 0x1a, 0x0a];

function isJsonWs(b: number | undefined): boolean {
  return b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;
}

/**
 * Magic bytes first; then safetensors (a plausible u64 LE header length followed by `{` or JSON
 * whitespace); then a bare JSON object (e.g. an index file). The .npy, GGUF and pickle magics
 * all make an implausible header length (more than the file, or than MAX_HEADER_SIZE), so their
 * files are `unknown`, never `safetensors`.
 */
export function detectFormat(head: Uint8Array, size: number): DetectedFormat {
  if (startsWithMagic(head, ZIP_LOCAL_MAGIC) || startsWithMagic(head, ZIP_EMPTY_MAGIC)) return 'zip';
  if (startsWithMagic(head, HDF5_MAGIC)) return 'hdf5';
  if (head.length >= 9) {
    const n = new DataView(head.buffer, head.byteOffset, 8).getBigUint64(0, true);
    const first = head[8];
    if (n >= 2n && n <= BigInt(MAX_HEADER_SIZE) && n <= BigInt(size) - 8n && (first === 0x7b || isJsonWs(first))) return 'safetensors';
  }
  if (head[0] === 0x7b) return 'json';
  return 'unknown';
}

/** Reads at most DETECT_BYTES bytes of `source` and guesses its format. */
export async function detectSource(source: ByteSource): Promise<DetectedFormat> {
  const head = await source.read(0, Math.min(DETECT_BYTES, source.size));
  return detectFormat(head, source.size);
}
