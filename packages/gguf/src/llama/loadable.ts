/**
 * Would llama.cpp load this GGUF as a model? For the architectures tensorport writes (arch.ts,
 * whose rows say what each graph creates), the checks llama.cpp's loader makes before it runs anything, each a finding
 * naming the key or tensor (reference notes §4.6, §2.1 rules 16–17):
 * - required keys with the exact type it reads (UINT32 counts, FLOAT32 epsilon);
 * - a tokenizer: a known tokenizer.ggml.model, its tokens, merges for gpt2, scores and token types
 *   of one element per token, as FLOAT32 and INT32 (read raw, unchecked, by llama.cpp);
 * - rope.dimension_count equal to the head size (llama: "invalid n_rot");
 * - every tensor of every block with the shape the graph creates, token_embd with one row per
 *   token, an optional bias or output.weight of the right shape when present, and no tensor the
 *   graph does not use ("wrong number of tensors").
 * Other architectures are not checked (an empty list); a file without general.architecture is a
 * tensor store, not a model.
 */
import type { Finding } from '@tensorport/core';
import type { GgufFile } from '../read.ts';
import type { GgufValue } from '../values.ts';
import { ggufArchitectureNamed } from './arch.ts';

const TOKENIZER_MODELS = new Set(['llama', 'gpt2', 'bert', 't5', 'rwkv', 'plamo2', 'none', 'no_vocab']);
const OPTIONAL_GLOBAL = new Set(['output.weight', 'rope_freqs.weight']);

function uint32(kv: ReadonlyMap<string, GgufValue>, key: string, required: boolean, out: Finding[]): number | undefined {
  const v = kv.get(key);
  if (v === undefined) {
    if (required) out.push({ code: 'GgufNotLoadable', message: `llama.cpp needs ${key} (UINT32); it is missing` });
    return undefined;
  }
  if (v.type !== 'UINT32') {
    out.push({ code: 'GgufNotLoadable', message: `llama.cpp reads ${key} as UINT32 only; it is ${v.type}` });
    return undefined;
  }
  return v.value as number;
}

function arrayLength(v: GgufValue | undefined, elementType: string): number | null {
  if (v?.type !== 'ARRAY' || v.value.elementType !== elementType) return null;
  return (v.value.values as ArrayLike<unknown>).length;
}

/** True for the architectures llamaCppFindings checks (the others get no finding, checked or not). */
export function checksLlamaCppArchitecture(name: string | null): boolean {
  return name !== null && ggufArchitectureNamed(name) !== null;
}

/** Findings that say why llama.cpp would refuse `file` as a model; empty when it would load it (or its architecture is not one tensorport checks). */
export function llamaCppFindings(file: GgufFile): Finding[] {
  const named = file.kv.get('general.architecture');
  const graph = named?.type === 'STRING' ? ggufArchitectureNamed(named.value) : null;
  if (!graph) return [];
  const a = graph.name;
  const kv = file.kv;
  const out: Finding[] = [];
  uint32(kv, `${a}.context_length`, true, out);
  const embd = uint32(kv, `${a}.embedding_length`, true, out);
  const blocks = uint32(kv, `${a}.block_count`, true, out);
  const ff = uint32(kv, `${a}.feed_forward_length`, true, out);
  const heads = uint32(kv, `${a}.attention.head_count`, true, out);
  const kvHeads = uint32(kv, `${a}.attention.head_count_kv`, false, out) ?? heads;
  const eps = kv.get(`${a}.attention.layer_norm_rms_epsilon`);
  if (eps?.type !== 'FLOAT32') out.push({ code: 'GgufNotLoadable', message: `llama.cpp needs ${a}.attention.layer_norm_rms_epsilon (FLOAT32); it is ${eps ? eps.type : 'missing'}` });
  const headDim = uint32(kv, `${a}.attention.key_length`, false, out) ?? (embd !== undefined && heads ? embd / heads : undefined);
  const rot = uint32(kv, `${a}.rope.dimension_count`, false, out);
  if (a === 'llama' && rot !== undefined && headDim !== undefined && rot !== headDim) out.push({ code: 'GgufNotLoadable', message: `${a}.rope.dimension_count is ${rot}, not the head size ${headDim} (llama.cpp: invalid n_rot)` });

  const model = kv.get('tokenizer.ggml.model');
  const tokens = arrayLength(kv.get('tokenizer.ggml.tokens'), 'STRING');
  if (model?.type !== 'STRING') out.push({ code: 'GgufNotLoadable', message: 'llama.cpp needs tokenizer.ggml.model (STRING); it is missing: convert from a directory with tokenizer.json' });
  else if (!TOKENIZER_MODELS.has(model.value)) out.push({ code: 'GgufNotLoadable', message: `tokenizer.ggml.model ${JSON.stringify(model.value)} is not one llama.cpp knows (${[...TOKENIZER_MODELS].join(', ')})` });
  else if (model.value !== 'none' && model.value !== 'no_vocab') {
    if (tokens === null) out.push({ code: 'GgufNotLoadable', message: 'llama.cpp needs tokenizer.ggml.tokens (an array of strings)' });
    if (model.value === 'gpt2' && arrayLength(kv.get('tokenizer.ggml.merges'), 'STRING') === null) out.push({ code: 'GgufNotLoadable', message: 'a gpt2 tokenizer needs tokenizer.ggml.merges (an array of strings)' });
    for (const [key, type] of [['tokenizer.ggml.scores', 'FLOAT32'], ['tokenizer.ggml.token_type', 'INT32']] as const) {
      if (!kv.has(key) || tokens === null) continue;
      const n = arrayLength(kv.get(key), type);
      if (n !== tokens) out.push({ code: 'GgufNotLoadable', message: `${key} must be ${tokens} ${type} values, one per token (llama.cpp reads it unchecked); it is ${n === null ? `not a ${type} array` : `${n} values`}` });
    }
  }

  if (embd === undefined || blocks === undefined || ff === undefined || !heads || kvHeads === undefined || headDim === undefined) return out;
  const q = heads * headDim;
  const kvDim = kvHeads * headDim;
  const vocab = tokens ?? undefined;
  // ggml ne order (dims): the reverse of the row-major shape.
  const want = new Map<string, Array<number | undefined>>([
    ['token_embd.weight', [embd, vocab]],
    ['output_norm.weight', [embd]],
  ]);
  for (let i = 0; i < blocks; i++) {
    const b = `blk.${i}.`;
    want.set(`${b}attn_norm.weight`, [embd]);
    if (graph.fused) {
      want.set(`${b}attn_qkv.weight`, [embd, q + 2 * kvDim]);
    } else {
      want.set(`${b}attn_q.weight`, [embd, q]);
      want.set(`${b}attn_k.weight`, [embd, kvDim]);
      want.set(`${b}attn_v.weight`, [embd, kvDim]);
      want.set(`${b}ffn_gate.weight`, [embd, ff]);
    }
    want.set(`${b}attn_output.weight`, [q, embd]);
    want.set(`${b}ffn_norm.weight`, [embd]);
    want.set(`${b}ffn_up.weight`, [embd, graph.fused ? 2 * ff : ff]);
    want.set(`${b}ffn_down.weight`, [ff, embd]);
    if (graph.qkNorms) {
      want.set(`${b}attn_q_norm.weight`, [headDim]);
      want.set(`${b}attn_k_norm.weight`, [headDim]);
    }
  }
  const biasDims: Readonly<Record<string, number>> = { 'attn_q.bias': q, 'attn_k.bias': kvDim, 'attn_v.bias': kvDim, 'attn_output.bias': embd };
  const have = new Map(file.tensors.map((t) => [t.name, t.dims]));
  for (const [name, dims] of want) {
    const got = have.get(name);
    if (!got) out.push({ code: 'GgufNotLoadable', message: `llama.cpp's ${a} graph needs tensor ${name}; it is missing`, tensor: name });
    else if (got.length !== dims.length || dims.some((d, k) => d !== undefined && d !== got[k])) {
      out.push({ code: 'GgufNotLoadable', message: `tensor ${name} has dims [${got.join(', ')}]; llama.cpp's ${a} graph makes [${dims.map((d) => d ?? '?').join(', ')}]`, tensor: name });
    }
  }
  for (const t of file.tensors) {
    const m = /^blk\.(\d+)\.(.+)$/.exec(t.name);
    if (!m || !graph.biases.includes(m[2]!) || Number(m[1]) >= blocks) continue;
    const d = biasDims[m[2]!]!;
    if (t.dims.length !== 1 || t.dims[0] !== d) out.push({ code: 'GgufNotLoadable', message: `tensor ${t.name} has dims [${t.dims.join(', ')}]; llama.cpp's ${a} graph makes [${d}]`, tensor: t.name });
  }
  const output = have.get('output.weight');
  if (output && (output.length !== 2 || output[0] !== embd || (vocab !== undefined && output[1] !== vocab))) {
    out.push({ code: 'GgufNotLoadable', message: `tensor output.weight has dims [${output.join(', ')}]; llama.cpp's ${a} graph makes [${embd}, ${vocab ?? '?'}]`, tensor: 'output.weight' });
  }
  const unused = file.tensors.filter((t) => !want.has(t.name) && !OPTIONAL_GLOBAL.has(t.name) && !(graph.biases.some((s) => t.name.endsWith(`.${s}`)) && /^blk\.\d+\./.test(t.name)));
  if (unused.length > 0) {
    const names = unused.slice(0, 3).map((t) => t.name).join(', ');
    out.push({ code: 'GgufNotLoadable', message: `${unused.length} tensor(s) llama.cpp's ${a} graph does not use (${names}${unused.length > 3 ? ', …' : ''}): it refuses the file (wrong number of tensors)`, tensor: unused[0]!.name });
  }
  return out;
}
