/** What `inspect` adds for a GGUF file: the model summary, ggml types, and metadata with the vocabulary cut short. */
import { TensorportError, type Checkpoint, type DType, type Finding, type TensorDescriptor } from '@tensorport/core';
import { checksLlamaCppArchitecture, llamaCppFindings, summarizeGguf, valueToString, type GgufFile, type GgufSummary } from '@tensorport/gguf';

/** Metadata arrays (tokens, merges, scores) longer than this are cut in `inspect` unless `fullMetadata` is asked for. */
export const INSPECT_ARRAY_ELEMENTS = 16;

export interface GgufInspectSummary extends GgufSummary {
  version: number;
  alignment: number;
  /** Absolute offset of the tensor data section (the header's size). */
  dataOffset: number;
  /**
   * Would llama.cpp load it as a model (keys, tokenizer, tensor shapes of its architecture)?
   * null when its architecture is not one tensorport checks (llama, qwen2, qwen3, phi3); the reasons are the
   * GgufNotLoadable warnings.
   */
  llamaCpp: 'loads' | 'refused' | null;
}

export function asGguf(checkpoint: Checkpoint): GgufFile | null {
  return checkpoint.format === 'gguf' && 'kv' in checkpoint ? (checkpoint as GgufFile) : null;
}

/** `findings`: the file's llamaCppFindings when the caller has them already (they are its warnings too). */
export function ggufSummary(file: GgufFile, findings: readonly Finding[] = llamaCppFindings(file)): GgufInspectSummary {
  const summary = summarizeGguf(file);
  const llamaCpp = checksLlamaCppArchitecture(summary.architecture) ? (findings.length === 0 ? 'loads' : 'refused') : null;
  return { ...summary, version: file.version, alignment: file.alignment, dataOffset: file.dataOffset, llamaCpp };
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

export interface GgufView {
  /** Metadata as inspect shows it (arrays cut unless `full`). */
  metadata: Map<string, string>;
  /** The tensors with their ggml type as dtype and their element shape; byte ranges as stored. */
  tensors: TensorDescriptor[];
  warnings: Finding[];
  summary: GgufInspectSummary;
  /** One line: architecture, context, tokenizer size, bits per weight. */
  note: string;
}

/** A GGUF checkpoint as the inspectors list it (the web page's worker): ggml types, element shapes, the vocabulary only counted. */
export function ggufView(checkpoint: Checkpoint, full = false): GgufView {
  const file = asGguf(checkpoint);
  if (!file) throw new TensorportError('UnsupportedFormat', `${checkpoint.format} is not GGUF`);
  const loadable = llamaCppFindings(file);
  const summary = ggufSummary(file, loadable);
  const tensors = file.tensors.map((t): TensorDescriptor => ({
    name: t.name,
    dtype: t.ggmlType.name as DType,
    shape: t.logicalShape,
    byteLength: t.byteLength,
    range: t.range,
    chunks: (size?: number) => t.chunks(size),
  }));
  const tok = summary.tokenizer ? `, tokenizer ${summary.tokenizer.model ?? '?'} with ${summary.tokenizer.tokens} tokens and ${summary.tokenizer.merges} merges` : '';
  const ctx = summary.contextLength === null ? '' : `, context length ${summary.contextLength}`;
  const note = `GGUF v${summary.version}: architecture ${summary.architecture ?? 'none'}${ctx}${tok}; ${summary.parameters} parameters at ${summary.bitsPerWeight.toFixed(2)} bits per weight. Only the header was read.`;
  return { metadata: new Map(Object.entries(ggufMetadata(file, full))), tensors, warnings: [...file.warnings, ...loadable], summary, note };
}
