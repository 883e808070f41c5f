import type { Finding } from '@tensorport/core';

/**
 * What the worker sends the page: plain data (structured-clonable), everything the page shows.
 * Byte positions are numbers: exact up to 2^53, as in core.
 */

export interface TensorRow {
  name: string;
  dtype: string;
  shape: number[];
  /** Element count; for a shape with a dim beyond 2^53 (only legal with 0 elements) this is 0. */
  params: number;
  bytes: number;
  /** Where the bytes are: the file (or `file:member` inside an archive) and [begin, end) in it. Null when not a plain range (deflated, strided, byte-swapped). */
  file: string | null;
  begin: number | null;
  end: number | null;
}

export interface DtypeTotal {
  dtype: string;
  tensors: number;
  params: number;
  bytes: number;
}

export interface QuantRow {
  path: string;
  bits: number;
  groupSize: number;
  mode: string;
  /** Dequantized weight shape. */
  shape: number[];
  /** Where bits and group size came from: config.json, `__metadata__`, or derived from shapes. */
  source: string;
}

export interface PickleSection {
  safe: boolean;
  /** Every global the pickles reference, in order of first appearance, with the allowlist's verdict. */
  globals: Array<{ name: string; allowed: boolean }>;
  findings: Finding[];
  pickles: number;
}

export interface Report {
  /** Reader that handled the input: safetensors, safetensors-sharded, npz, npy, torch-zip, torch-legacy, pickle, or unknown. */
  format: string;
  /** Every file given, with its role. */
  files: Array<{ name: string; size: number; role: 'data' | 'index' | 'config' | 'ignored' }>;
  valid: boolean;
  errors: Finding[];
  warnings: Finding[];
  metadata: Array<[string, string]> | null;
  tensors: TensorRow[];
  /** Per dtype, most bytes first. */
  totals: DtypeTotal[];
  /** MLX quantized layers; null when the checkpoint has none. */
  quantization: { layers: QuantRow[]; error: Finding | null } | null;
  /** Pickle scan (torch checkpoints, bare pickles, archives holding pickles); null when there is no pickle. */
  pickle: PickleSection | null;
  /** Distinct bytes read from the files (a range read twice counts once). */
  bytesRead: number;
  /** Bytes requested from the files, repeats included. */
  bytesRequested: number;
  /** Sum of the sizes of the files read. */
  totalBytes: number;
  /** What was deliberately not checked here. */
  notes: string[];
}
