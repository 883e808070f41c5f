import type { ByteSource } from './io/source.ts';
import { MAX_HEADER_SIZE } from './safetensors/header.ts';

/** What a file looks like from its first bytes; a guess to pick a reader, not a validation. */
export type DetectedFormat = 'safetensors' | 'zip' | 'npy' | 'pickle' | 'gguf' | 'hdf5' | 'json' | 'unknown';

/** How many leading bytes `detectFormat` looks at. */
export const DETECT_BYTES = 16;

function startsWith(head: Uint8Array, magic: readonly number[]): boolean {
  if (head.length < magic.length) return false;
  for (let i = 0; i < magic.length; i++) if (head[i] !== magic[i]) return false;
  return true;
}

const ZIP_LOCAL = [0x50, 0x4b, 0x03, 0x04];
/** An empty archive is only an end-of-central-directory record. */
const ZIP_EMPTY = [0x50, 0x4b, 0x05, 0x06];
const NPY = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59];
const GGUF = [0x47, 0x47, 0x55, 0x46];
const HDF5 = [0x89, 0x48, 0x44, 0x46, 0x0d, 0x0a, 0x1a, 0x0a];

function isJsonWs(b: number | undefined): boolean {
  return b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;
}

/**
 * Magic bytes first; then safetensors (a plausible u64 LE header length followed by `{` or JSON
 * whitespace); then a bare JSON object (e.g. an index file).
 */
export function detectFormat(head: Uint8Array, size: number): DetectedFormat {
  if (startsWith(head, ZIP_LOCAL) || startsWith(head, ZIP_EMPTY)) return 'zip';
  if (startsWith(head, NPY)) return 'npy';
  if (startsWith(head, HDF5)) return 'hdf5';
  if (startsWith(head, GGUF)) return 'gguf';
  // Protocol 2+ pickles (what torch.save writes outside a zip) open with PROTO n.
  if (head.length >= 2 && head[0] === 0x80 && head[1]! >= 2 && head[1]! <= 5) return 'pickle';
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
