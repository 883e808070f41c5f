import { TensorportError } from '@tensorport/core';
import { gguf, type GgufValue } from '../values.ts';

/** tokenizer.ggml.token_type values (gguf-py TokenType). */
export const TOKEN_TYPE = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;

interface AddedToken {
  id: number;
  content: string;
  special?: boolean;
}

interface PreTokenizer {
  type?: string;
  pretokenizers?: PreTokenizer[];
  pattern?: { Regex?: string; String?: string };
  use_regex?: boolean;
}

interface TokenizerJson {
  pre_tokenizer?: PreTokenizer | null;
  model?: { type?: string; vocab?: Record<string, number>; merges?: Array<string | [string, string]>; byte_fallback?: boolean; unk_token?: string | null };
  added_tokens?: AddedToken[];
}

type TokenizerConfig = Record<string, unknown>;

const BYTE_TOKEN = /^<0x[0-9A-Fa-f]{2}>$/;

/**
 * llama.cpp's names for the byte-level BPE pre-tokenizers, by the split regex tokenizer.json holds
 * (the regexes as the released Llama 3 and Qwen2 tokenizer.json files spell them). The converter
 * (convert_hf_to_gguf.py get_vocab_base_pre) tells them apart by hashing the tokenizer's output on a
 * test text, which needs the tokenizer library; the regex is what that output depends on.
 */
const PRE_BY_SPLIT: ReadonlyArray<readonly [string, string]> = [
  ['llama-bpe', "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"],
  ['qwen2', "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"],
];

function preTokenizers(p: PreTokenizer | null | undefined): PreTokenizer[] {
  if (!p || typeof p !== 'object') return [];
  return p.type === 'Sequence' && Array.isArray(p.pretokenizers) ? p.pretokenizers.flatMap(preTokenizers) : [p];
}

/**
 * `tokenizer.ggml.pre` of a byte-level BPE tokenizer: a known split regex names its pre-tokenizer;
 * a lone ByteLevel with its own regex is GPT-2's ("gpt2"); anything else is "default", llama.cpp's
 * generic split, which can tokenize differently: `options.pre` overrides.
 */
export function bpePreTokenizer(tokenizer: unknown): string {
  const steps = preTokenizers((tokenizer as TokenizerJson)?.pre_tokenizer);
  const split = steps.find((p) => p.type === 'Split')?.pattern?.Regex;
  if (split !== undefined) return PRE_BY_SPLIT.find(([, re]) => re === split)?.[0] ?? 'default';
  if (steps.length === 1 && steps[0]!.type === 'ByteLevel' && steps[0]!.use_regex !== false) return 'gpt2';
  return 'default';
}

/** A special token's id from config.json (`bos_token_id`: a number, or a list whose first is used). */
function configTokenId(v: unknown): number | undefined {
  const id = Array.isArray(v) ? v[0] : v;
  return typeof id === 'number' && Number.isInteger(id) && id >= 0 ? id : undefined;
}

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
 * or bpePreTokenizer's name for the split regex (llama.cpp's converter hashes the tokenizer's output).
 */
export interface TokenizerMetadataOptions {
  /** tokenizer.ggml.pre; default: bpePreTokenizer's answer. */
  pre?: string;
  /**
   * The embedding's row count (config.json vocab_size): llama.cpp needs one token per row, so a
   * vocabulary shorter than the embedding (Qwen2 pads 151646 tokens to 151936 rows) is padded with
   * unused `[PAD<id>]` tokens, as the converter does.
   */
  vocabSize?: number;
  /** config.json: its bos/eos/pad ids stand in where tokenizer_config.json names no such token. */
  modelConfig?: Record<string, unknown>;
}

export function llamaTokenizerMetadata(tokenizer: unknown, config: TokenizerConfig = {}, options: TokenizerMetadataOptions = {}): Array<[string, GgufValue]> {
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
  if (options.vocabSize !== undefined && Number.isInteger(options.vocabSize) && options.vocabSize <= 2 ** 24) size = Math.max(size, options.vocabSize);
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
  if (!spm) kv.push(['tokenizer.ggml.pre', gguf.str(options.pre ?? bpePreTokenizer(tokenizer))]);
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
    const id = idOf.get(tokenContent(config[field]) ?? '') ?? configTokenId(options.modelConfig?.[`${field}_id`]);
    if (id !== undefined && id < size) kv.push([`tokenizer.ggml.${key}_token_id`, gguf.u32(id)]);
  }
  if (typeof config.add_bos_token === 'boolean') kv.push(['tokenizer.ggml.add_bos_token', gguf.bool(config.add_bos_token)]);
  if (typeof config.add_eos_token === 'boolean') kv.push(['tokenizer.ggml.add_eos_token', gguf.bool(config.add_eos_token)]);
  if (typeof config.chat_template === 'string') kv.push(['tokenizer.chat_template', gguf.str(config.chat_template)]);
  return kv;
}
