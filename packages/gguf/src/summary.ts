import { bitsPerWeight } from './ggml-types.ts';
import type { GgufFile } from './read.ts';
import type { GgufValue } from './values.ts';

export interface GgufSummary {
  architecture: string | null;
  name: string | null;
  /** `<arch>.context_length`, when present. */
  contextLength: number | null;
  /** tokenizer.ggml.model and the vocabulary size, without the vocabulary. */
  tokenizer: { model: string | null; tokens: number; merges: number } | null;
  tensors: number;
  parameters: number;
  /** Tensor data bytes (padding excluded). */
  bytes: number;
  /** Over all tensors: data bits per parameter. */
  bitsPerWeight: number;
  /** Per ggml type: tensors, parameters and that type's bits per weight. */
  types: Record<string, { tensors: number; parameters: number; bitsPerWeight: number }>;
}

const str = (v: GgufValue | undefined): string | null => (v?.type === 'STRING' ? v.value : null);
const num = (v: GgufValue | undefined): number | null => (v && (typeof v.value === 'number' || typeof v.value === 'bigint') ? Number(v.value) : null);
const len = (v: GgufValue | undefined): number => (v?.type === 'ARRAY' ? (v.value.values as ArrayLike<unknown>).length : 0);

/** What `inspect` shows about a GGUF model: architecture, context, tokenizer size, parameters and bits per weight. */
export function summarizeGguf(file: GgufFile): GgufSummary {
  const arch = str(file.kv.get('general.architecture'));
  const types: GgufSummary['types'] = {};
  let parameters = 0;
  let bytes = 0;
  for (const t of file.tensors) {
    const e = (types[t.ggmlType.name] ??= { tensors: 0, parameters: 0, bitsPerWeight: bitsPerWeight(t.ggmlType) });
    e.tensors++;
    e.parameters += t.elements;
    parameters += t.elements;
    bytes += t.byteLength;
  }
  const model = file.kv.get('tokenizer.ggml.model');
  return {
    architecture: arch,
    name: str(file.kv.get('general.name')),
    contextLength: arch ? num(file.kv.get(`${arch}.context_length`)) : null,
    tokenizer: model || file.kv.has('tokenizer.ggml.tokens') ? { model: str(model), tokens: len(file.kv.get('tokenizer.ggml.tokens')), merges: len(file.kv.get('tokenizer.ggml.merges')) } : null,
    tensors: file.tensors.length,
    parameters,
    bytes,
    bitsPerWeight: parameters ? (bytes * 8) / parameters : 0,
    types,
  };
}
