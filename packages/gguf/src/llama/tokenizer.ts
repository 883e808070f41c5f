import { TensorportError } from '@tensorport/core';
import { gguf, type GgufValue } from '../values.ts';

/** tokenizer.ggml.token_type values (gguf-py TokenType). */
export const TOKEN_TYPE = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;

interface AddedToken {
  id: number;
  content: string;
  special?: boolean;
}

interface TokenizerJson {
  model?: { type?: string; vocab?: Record<string, number>; merges?: Array<string | [string, string]>; byte_fallback?: boolean; unk_token?: string | null };
  added_tokens?: AddedToken[];
}

type TokenizerConfig = Record<string, unknown>;

const BYTE_TOKEN = /^<0x[0-9A-Fa-f]{2}>$/;

function tokenContent(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object' && typeof (v as { content?: unknown }).content === 'string') return (v as { content: string }).content;
  return undefined;
}

/**
 * tokenizer.ggml.* metadata from a HF tokenizer.json (and tokenizer_config.json, for special
 * tokens, add_bos/add_eos and the chat template). BPE vocabularies with byte_fallback (Llama 1/2,
 * SentencePiece-derived) become model "llama" with scores; byte-level BPE (Llama 3) becomes "gpt2"
 * with merges. Limits: SentencePiece scores are not in tokenizer.json, so they are approximated by
 * -id (merge priority follows id order in these vocabularies); `tokenizer.ggml.pre` is `options.pre`
 * or "default" (llama.cpp picks it by hashing the tokenizer's output, which needs the tokenizer).
 */
export function llamaTokenizerMetadata(tokenizer: unknown, config: TokenizerConfig = {}, options: { pre?: string } = {}): Array<[string, GgufValue]> {
  const tj = tokenizer as TokenizerJson;
  const model = tj?.model;
  if (!model || model.type !== 'BPE' || !model.vocab || typeof model.vocab !== 'object') {
    throw new TensorportError('GgufInvalidModel', `tokenizer.json: only BPE models map to GGUF here (got ${JSON.stringify(model?.type)})`);
  }
  const added = new Map<number, AddedToken>();
  for (const t of tj.added_tokens ?? []) if (Number.isInteger(t.id) && typeof t.content === 'string') added.set(t.id, t);
  let size = 0;
  for (const id of Object.values(model.vocab)) size = Math.max(size, id + 1);
  for (const id of added.keys()) size = Math.max(size, id + 1);
  if (size > 2 ** 24) throw new TensorportError('GgufInvalidModel', `tokenizer.json: vocabulary of ${size} tokens`);
  const tokens: string[] = new Array(size);
  const types = new Int32Array(size);
  for (const [text, id] of Object.entries(model.vocab)) {
    if (!Number.isInteger(id) || id < 0) throw new TensorportError('GgufInvalidModel', `tokenizer.json: token ${JSON.stringify(text)} has id ${id}`);
    tokens[id] = text;
  }
  const spm = model.byte_fallback === true;
  for (let id = 0; id < size; id++) {
    const a = added.get(id);
    if (a) {
      tokens[id] = a.content;
      types[id] = a.special ? TOKEN_TYPE.CONTROL : TOKEN_TYPE.USER_DEFINED;
    } else if (tokens[id] === undefined) {
      tokens[id] = `[PAD${id}]`;
      types[id] = TOKEN_TYPE.UNUSED;
    } else {
      types[id] = spm && BYTE_TOKEN.test(tokens[id]!) ? TOKEN_TYPE.BYTE : TOKEN_TYPE.NORMAL;
    }
  }
  if (spm && model.unk_token) {
    const unk = model.vocab[model.unk_token];
    if (unk !== undefined) types[unk] = TOKEN_TYPE.UNKNOWN;
  }
  const kv: Array<[string, GgufValue]> = [['tokenizer.ggml.model', gguf.str(spm ? 'llama' : 'gpt2')]];
  if (!spm) kv.push(['tokenizer.ggml.pre', gguf.str(options.pre ?? 'default')]);
  kv.push(['tokenizer.ggml.tokens', gguf.strings(tokens)]);
  if (spm) {
    const scores = new Float32Array(size);
    for (let id = 0; id < size; id++) scores[id] = types[id] === TOKEN_TYPE.NORMAL ? -id : 0;
    kv.push(['tokenizer.ggml.scores', gguf.array('FLOAT32', scores)]);
  }
  kv.push(['tokenizer.ggml.token_type', gguf.array('INT32', types)]);
  if (!spm) {
    const merges = (model.merges ?? []).map((m) => (Array.isArray(m) ? m.join(' ') : m));
    if (merges.length) kv.push(['tokenizer.ggml.merges', gguf.strings(merges)]);
  }
  const idOf = new Map<string, number>();
  for (let id = 0; id < size; id++) if (!idOf.has(tokens[id]!)) idOf.set(tokens[id]!, id);
  for (const [field, key] of [['bos_token', 'bos'], ['eos_token', 'eos'], ['unk_token', 'unknown'], ['pad_token', 'padding']] as const) {
    const id = idOf.get(tokenContent(config[field]) ?? '');
    if (id !== undefined) kv.push([`tokenizer.ggml.${key}_token_id`, gguf.u32(id)]);
  }
  if (typeof config.add_bos_token === 'boolean') kv.push(['tokenizer.ggml.add_bos_token', gguf.bool(config.add_bos_token)]);
  if (typeof config.add_eos_token === 'boolean') kv.push(['tokenizer.ggml.add_eos_token', gguf.bool(config.add_eos_token)]);
  if (typeof config.chat_template === 'string') kv.push(['tokenizer.chat_template', gguf.str(config.chat_template)]);
  return kv;
}
