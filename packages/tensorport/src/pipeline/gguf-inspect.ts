/** What `inspect` adds for a GGUF file: the model summary, ggml types, and metadata with the vocabulary cut short. */
import type { Checkpoint } from '@tensorport/core';
import { summarizeGguf, valueToString, type GgufFile, type GgufSummary } from '@tensorport/gguf';

/** Metadata arrays (tokens, merges, scores) longer than this are cut in `inspect` unless `fullMetadata` is asked for. */
export const INSPECT_ARRAY_ELEMENTS = 16;

export interface GgufInspectSummary extends GgufSummary {
  version: number;
  alignment: number;
  /** Absolute offset of the tensor data section (the header's size). */
  dataOffset: number;
}

export function asGguf(checkpoint: Checkpoint): GgufFile | null {
  return checkpoint.format === 'gguf' && 'kv' in checkpoint ? (checkpoint as GgufFile) : null;
}

export function ggufSummary(file: GgufFile): GgufInspectSummary {
  return { ...summarizeGguf(file), version: file.version, alignment: file.alignment, dataOffset: file.dataOffset };
}

/**
 * Every key as text; arrays cut after INSPECT_ARRAY_ELEMENTS (a `"… N more"` marker) unless `full`.
 * Built from `kv` directly: the file's lazy `metadata` would render the whole vocabulary.
 */
export function ggufMetadata(file: GgufFile, full: boolean): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of file.kv) out[k] = valueToString(v, full ? Infinity : INSPECT_ARRAY_ELEMENTS);
  return out;
}
