import type { DetectedFormat } from '../detect.ts';
import type { Finding } from '../errors.ts';
import type { ByteSource } from '../io/source.ts';
import type { SafetensorsHeader } from '../safetensors/header.ts';
import type { DeflateCodec } from '../zip/codec.ts';
import type { ZipArchive } from '../zip/reader.ts';

export interface Identification {
  /** The kind an identifier named (`safetensors`, `torch-zip`, `gguf`…; see each package's kinds). */
  kind: string;
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
  /** Bytes read to decide (every read, summed). */
  bytesRead: number;
}

export interface IdentifyOptions {
  /** Lets an MLX .npz's deflated weight header be read; without it member names decide. */
  codec?: DeflateCodec;
  /** Largest safetensors header read to look for MLX quantization (default 16 MiB). */
  maxHeaderBytes?: number;
}

export interface KindInfo {
  /** What the file is, in words. */
  readonly what: string;
  /** What tensorport can do with it ("convert, inspect, validate", "scan only", "not supported: …"). */
  readonly can: string;
  /** Extensions such files usually carry; another extension gets an ExtensionMismatch warning. */
  readonly extensions: readonly string[];
}

/**
 * What identifiers look at, each thing read once and shared: the first bytes, a ZIP's central
 * directory, a safetensors header, an index window. Reads are counted for `bytesRead`.
 */
export interface IdentifyProbe {
  readonly source: ByteSource;
  /** The first 4 KiB (less for a smaller file). */
  readonly head: Uint8Array;
  /** What core's magic check says (`detectFormat`: ZIP, safetensors, HDF5, JSON or unknown); other formats test `head` for their own magic. */
  readonly coarse: DetectedFormat;
  readonly options: IdentifyOptions;
  /** Facts for the answer's `details`. */
  readonly details: Record<string, string | number>;
  /** Findings for the answer's `warnings`. */
  readonly warnings: Finding[];
  read(offset: number, length: number): Promise<Uint8Array>;
  /** The ZIP's directory, or null when it is not a ZIP or is unreadable (the warning says why). */
  zip(): Promise<ZipArchive | null>;
  /** The ZIP's member names, in directory order, or null. */
  zipNames(): Promise<readonly string[] | null>;
  /** A safetensors file's parsed header, or null (too large to look at, or invalid: the warning says why). */
  safetensorsHeader(): Promise<SafetensorsHeader | null>;
  /** A JSON file's first 64 KiB as text (an index's weight_map follows a small metadata object). */
  jsonWindow(): Promise<string>;
}

export interface Identified {
  kind: string;
  container?: 'safetensors' | 'npz';
}

/**
 * One package's part of `identify`: the kinds it names, and how it recognises them. `identify`
 * asks each identifier in turn; the first answer wins. A refiner (`refines`) is asked after that
 * only when the answer is one of the kinds it refines, and may replace it (MLX quantized weights
 * are safetensors or npz files with more to say).
 */
export interface KindIdentifier {
  readonly name: string;
  readonly kinds: Readonly<Record<string, KindInfo>>;
  readonly refines?: readonly string[];
  identify(probe: IdentifyProbe, current?: Identified): Promise<Identified | null>;
}
