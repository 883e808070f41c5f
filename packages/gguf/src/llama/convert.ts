import { TensorportError, castDescriptor, dtypeBytes, type CastTarget, type TensorDescriptor } from '@tensorport/core';
import { redescribe } from '../descriptor.ts';
import { ggmlTypeByName, type GgmlType } from '../ggml-types.ts';
import type { GgufFile, GgufTensor } from '../read.ts';
import { dequantizedDescriptor, quantizeDescriptor, type BlockTensor, type ErrorProbe } from '../transform.ts';
import { valueToString, type GgufValue } from '../values.ts';
import type { GgufWriteTensor } from '../write.ts';
import { llamaConfigFromGguf, llamaHeads, llamaMetadata, type LlamaConfig } from './config.ts';
import { ggufToHfName, hfToGgufName, isSkippedHfName, permutedHeads } from './names.ts';
import { permuteQK } from './permute.ts';
import { llamaTokenizerMetadata } from './tokenizer.ts';
import { ggufArchitectureNamed, type GgufArchitecture } from './arch.ts';
import { f32Tensor, llama3RopeFactors } from './rope.ts';

/** general.file_type (llama_ftype) for each whole-model output type. */
const FILE_TYPE: Readonly<Record<string, number>> = { F32: 0, F16: 1, Q4_0: 2, Q4_1: 3, Q8_0: 7, Q5_0: 8, Q5_1: 9, BF16: 32, TQ1_0: 36, TQ2_0: 37 };
/** MXFP4 names a file (MOSTLY_MXFP4_MOE) but is no outtype of convert_hf_to_gguf.py: only blocks carried over from MLX are in it. */
const BLOCK_FILE_TYPE: Readonly<Record<string, number>> = { ...FILE_TYPE, MXFP4: 38 };

export interface LlamaToGgufOptions {
  /** The type of the matrices (default F16); norms and 1-D tensors are always F32, as the converter writes them. */
  outtype?: 'F32' | 'F16' | 'BF16' | 'Q8_0' | 'Q4_0' | 'Q4_1' | 'Q5_0' | 'Q5_1' | 'TQ1_0' | 'TQ2_0';
  /** general.file_type's type when it is not `outtype` (the type most bytes of already-blocked tensors are in). */
  fileType?: string;
  name?: string;
  /** The GGUF architecture (default llama: keys under `llama.`, Q/K rows permuted); see ggufArchitecture. */
  architecture?: GgufArchitecture;
  /** Tensors (by HF name) whose conversion is measured: each probe gets its max |written − input| as it streams. */
  measure?: ReadonlyMap<string, ErrorProbe>;
  /** Parsed tokenizer.json and tokenizer_config.json, when present. */
  tokenizer?: unknown;
  tokenizerConfig?: Record<string, unknown>;
  tokenizerPre?: string;
}

export interface LlamaToGgufResult {
  tensors: GgufWriteTensor[];
  metadata: Array<[string, GgufValue]>;
  /** HF tensors left out (rotary inv_freq and friends). */
  skipped: string[];
  /** Tensors written as F16 because their rows are not whole blocks (the converter's fallback). */
  fallbacks: string[];
}

const rowBytesOf = (d: TensorDescriptor): number => {
  const last = d.shape.length ? d.shape[d.shape.length - 1]! : 1;
  return d.shape.length <= 1 ? dtypeBytes(d.dtype)! : last * dtypeBytes(d.dtype)!;
};

/**
 * HF llama (LlamaForCausalLM safetensors tensors + config.json) → GGUF tensors and metadata, as
 * llama.cpp's convert_hf_to_gguf.py lays them out: GGUF names, q/k rows permuted to llama.cpp's
 * RoPE pairing, norms and 1-D tensors F32, matrices `outtype` (F16 when a row is not whole blocks).
 * A tensor already in ggml blocks (a BlockTensor: MLX layers repacked) keeps its type; only its
 * name changes and its q/k rows move (whole rows of blocks).
 */
export function llamaToGguf(tensors: readonly TensorDescriptor[], config: LlamaConfig, options: LlamaToGgufOptions = {}): LlamaToGgufResult {
  const outtype = options.outtype ?? 'F16';
  const fileType = options.fileType ?? outtype;
  if (!ggmlTypeByName(outtype) || !(outtype in FILE_TYPE)) throw new TensorportError('InvalidOption', `outtype ${JSON.stringify(outtype)} is not one of ${Object.keys(FILE_TYPE).join(', ')}`);
  if (!(fileType in BLOCK_FILE_TYPE)) throw new TensorportError('InvalidOption', `file type ${JSON.stringify(fileType)} is not one of ${Object.keys(BLOCK_FILE_TYPE).join(', ')}`);
  const target = ggmlTypeByName(outtype)!;
  const { heads, kvHeads, headDim } = llamaHeads(config);
  const arch = options.architecture ?? ggufArchitectureNamed('llama')!;
  const permuted = (name: string) => (arch.permuteQK ? permutedHeads(name) : null);
  const out: GgufWriteTensor[] = [];
  const skipped: string[] = [];
  const fallbacks: string[] = [];
  for (const t of tensors) {
    if (isSkippedHfName(t.name)) {
      skipped.push(t.name);
      continue;
    }
    const name = hfToGgufName(t.name, arch.layerNames);
    if (!name) throw new TensorportError('GgufInvalidModel', `tensor ${JSON.stringify(t.name)} has no GGUF llama name`, { tensor: t.name });
    const blocks = t as TensorDescriptor & Partial<BlockTensor>;
    if (blocks.ggmlType && blocks.logicalShape) {
      let d = redescribe(blocks as BlockTensor, name);
      const which = permuted(name);
      const rows = blocks.logicalShape.slice(0, -1).reduce((a, b) => a * b, 1);
      if (which) d = permuteQK(d, which === 'q' ? heads : kvHeads, d.byteLength / rows, true);
      out.push(d);
      continue;
    }
    if (t.dtype !== 'F32' && t.dtype !== 'F16' && t.dtype !== 'BF16' && t.dtype !== 'F64') {
      throw new TensorportError('UnsupportedCast', `tensor ${JSON.stringify(t.name)} is ${t.dtype}; a llama checkpoint holds float tensors`, { tensor: t.name });
    }
    let src: TensorDescriptor = redescribe(t, name);
    const which = permuted(name);
    if (which) src = permuteQK(src, which === 'q' ? heads : kvHeads, rowBytesOf(src), true);
    const forceF32 = t.shape.length <= 1 || name.endsWith('_norm.weight') || !name.endsWith('.weight');
    let type: GgmlType = forceF32 ? ggmlTypeByName('F32')! : target;
    const last = t.shape[t.shape.length - 1] ?? 1;
    if (last % type.blockSize !== 0) {
      fallbacks.push(t.name);
      type = ggmlTypeByName('F16')!;
    }
    const probe = options.measure?.get(t.name);
    // A measured tensor goes through quantizeBlocks for float types too: the same bytes as the cast.
    if (probe) out.push(quantizeDescriptor(src, type, probe));
    else if (type.dtype) out.push(castDescriptor(src, type.dtype as CastTarget, { strict: true }));
    else out.push(quantizeDescriptor(src, type));
  }
  // Llama 3.1+: the converter's generated frequency factors, which llama.cpp's llama graph reads.
  const factors = arch.name === 'llama' ? llama3RopeFactors(config, headDim) : null;
  if (factors) out.push(f32Tensor('rope_freqs.weight', factors));
  const metadata = llamaMetadata(config, { ...(options.name ? { name: options.name } : {}), fileType: BLOCK_FILE_TYPE[fileType]!, architecture: arch.name });
  if (options.tokenizer !== undefined) {
    metadata.push(...llamaTokenizerMetadata(options.tokenizer, options.tokenizerConfig ?? {}, { ...(options.tokenizerPre ? { pre: options.tokenizerPre } : {}), vocabSize: config.vocab_size, modelConfig: config }));
  }
  return { tensors: out, metadata, skipped, fallbacks };
}

export interface LlamaFromGgufOptions {
  /** F32, F16 or BF16 (dequantized), or "keep": the raw ggml blocks as U8, their type in the metadata. */
  dtype?: CastTarget | 'keep';
  /** Cut metadata arrays (the vocabulary) after this many elements in `metadata`. Default: all. */
  maxArrayElements?: number;
}

export interface LlamaFromGgufResult {
  tensors: TensorDescriptor[];
  /** transformers config.json for the written weights. */
  config: Record<string, unknown>;
  /** Every GGUF key as text (for safetensors __metadata__), plus gguf.type.<name> per tensor in "keep" mode. */
  metadata: Map<string, string>;
  /** GGUF tensors with no HF counterpart (rope_freqs.weight: transformers recomputes it). */
  skipped: string[];
}

const TORCH_DTYPE = { F32: 'float32', F16: 'float16', BF16: 'bfloat16' } as const;

/**
 * GGUF llama → HF LlamaForCausalLM tensors + config.json: names mapped back, q/k rows
 * un-permuted (rows move whole, so raw blocks can be un-permuted too), tensors dequantized
 * while streaming.
 */
export function llamaFromGguf(file: GgufFile, options: LlamaFromGgufOptions = {}): LlamaFromGgufResult {
  const dtype = options.dtype ?? 'F32';
  const heads = file.kv.get('llama.attention.head_count');
  const kvHeads = file.kv.get('llama.attention.head_count_kv') ?? heads;
  const count = (v: GgufValue | undefined, key: string): number => {
    if (v === undefined || (typeof v.value !== 'number' && typeof v.value !== 'bigint')) throw new TensorportError('GgufInvalidModel', `GGUF metadata has no numeric ${key}`);
    return Number(v.value);
  };
  const nHead = count(heads, 'llama.attention.head_count');
  const nKv = count(kvHeads, 'llama.attention.head_count_kv');
  // transformers refuses safetensors metadata without format "pt".
  const metadata = new Map<string, string>([['format', 'pt']]);
  for (const [k, v] of file.kv) metadata.set(k, valueToString(v, options.maxArrayElements));
  const tensors: TensorDescriptor[] = [];
  const skipped: string[] = [];
  let embed: GgufTensor | undefined;
  let hasOutput = false;
  for (const t of file.tensors) {
    const hf = ggufToHfName(t.name);
    if (!hf) {
      skipped.push(t.name);
      continue;
    }
    if (t.name === 'token_embd.weight') embed = t;
    if (t.name === 'output.weight') hasOutput = true;
    let d: TensorDescriptor;
    if (dtype === 'keep') {
      d = t;
      metadata.set(`gguf.type.${hf}`, t.ggmlType.name);
      metadata.set(`gguf.shape.${hf}`, JSON.stringify(t.logicalShape));
    } else d = dequantizedDescriptor(t, dtype);
    const which = permutedHeads(t.name);
    if (which) {
      const rowBytes = t.logicalShape.length <= 1 ? (dtype === 'keep' ? t.ggmlType.typeSize : dtypeBytes(d.dtype)!) : d.byteLength / t.logicalShape[0]!;
      d = permuteQK(d, which === 'q' ? nHead : nKv, rowBytes, false);
    }
    tensors.push(redescribe(d, hf));
  }
  if (!embed) throw new TensorportError('GgufInvalidModel', 'GGUF llama model has no token_embd.weight');
  const config = llamaConfigFromGguf(file.kv, {
    vocabSize: embed.logicalShape[0]!,
    tied: !hasOutput,
    dtype: dtype === 'keep' ? 'float32' : TORCH_DTYPE[dtype],
  });
  return { tensors, config, metadata, skipped };
}
