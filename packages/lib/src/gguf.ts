/**
 * GGUF on either side of `convert`, as pipeline transforms built from @tensorport/gguf's functions:
 * GGUF → safetensors (block types dequantized, llama names mapped back, config.json) and
 * safetensors → GGUF (quantized to a ggml type, llama names and metadata from config.json).
 */
import { castDescriptor, TensorportError, type CastTarget, type Checkpoint, type Context, type Finding, type TensorDescriptor } from '@tensorport/core';
import {
  canQuantize, ggmlTypeByName, ggufArchitecture, type ErrorProbe, mlxLayerToGguf, quantizeDescriptor, llamaFromGguf, llamaToGguf, valueToString,
  type BlockTensor, type GgufFile, type GgufValue, type LlamaConfig, type LlamaToGgufOptions, type MlxToGgufReport,
} from '@tensorport/gguf';
import { dequantizeCheckpoint, findQuantizedLayers, readConfig, type FloatDType } from '@tensorport/mlx';
import { hfDequantizedTensors } from './hf-quant.ts';
import type { Transform, Transformed } from './pipeline/transform.ts';
import { asGguf } from './pipeline/gguf-inspect.ts';

export interface FromGgufOptions {
  /** Every float tensor to this dtype; default: F32/F16/BF16 tensors as stored, block types dequantized to F32. */
  dtype?: CastTarget;
  /** Raw ggml block bytes (U8) instead of dequantizing, the type in `__metadata__` as `gguf.type.<name>`. */
  keepBlocks?: boolean;
}

export interface ToGgufOptions {
  /**
   * ggml type of the matrices (any type quantizeBlocks writes); default: the input's float dtype,
   * so nothing is rounded. For MLX-quantized layers: F32/F16/BF16 dequantizes them (MLX's
   * arithmetic); a block type keeps a layer's codes when it holds them exactly, else re-quantizes
   * it from MLX's f32 values; by default each layer gets the block type that holds it exactly.
   */
  type?: string;
}

/** The side file transformers needs beside a GGUF llama converted back. */
const CONFIG_FILE = 'config.json';
const TOKENIZER_FILE = 'tokenizer.json';
const TOKENIZER_CONFIG_FILE = 'tokenizer_config.json';
/** tokenizer.json of a 256k vocabulary is ~35 MB. */
const MAX_TOKENIZER_BYTES = 256 * 2 ** 20;

const isBlock = (typeName: string): boolean => !ggmlTypeByName(typeName)?.dtype;
const TEXT = new TextEncoder();

function isLlamaGguf(file: GgufFile): boolean {
  const arch = file.kv.get('general.architecture');
  return arch?.type === 'STRING' && arch.value === 'llama' && file.tensors.some((t) => t.name === 'token_embd.weight');
}

/** GGUF → plain tensors. Any other input passes through unchanged. */
export function fromGguf(options: FromGgufOptions = {}): Transform {
  return (checkpoint) => {
    const file = asGguf(checkpoint);
    if (!file) return checkpoint;
    return isLlamaGguf(file) ? llamaBack(file, options) : plainBack(file, options);
  };
}

function plainBack(file: GgufFile, options: FromGgufOptions): Transformed {
  const metadata = new Map<string, string>([['format', 'pt']]);
  for (const [k, v] of file.kv) metadata.set(k, valueToString(v));
  const tensors = file.tensors.map((t): TensorDescriptor => {
    if (!isBlock(t.ggmlType.name)) return t;
    if (!options.keepBlocks) return file.dequantized(t, options.dtype ?? 'F32');
    metadata.set(`gguf.type.${t.name}`, t.ggmlType.name);
    metadata.set(`gguf.shape.${t.name}`, JSON.stringify(t.logicalShape));
    return t;
  });
  return { tensors, metadata };
}

function llamaBack(file: GgufFile, options: FromGgufOptions): Transformed {
  let tensors: TensorDescriptor[];
  let result: ReturnType<typeof llamaFromGguf>;
  if (options.keepBlocks || options.dtype) {
    result = llamaFromGguf(file, { dtype: options.keepBlocks ? 'keep' : options.dtype! });
    tensors = result.tensors;
  } else {
    // Stored floats as they are, blocks to F32: the same tensors from both mappings, chosen per tensor.
    const kept = llamaFromGguf(file, { dtype: 'keep' });
    result = llamaFromGguf(file, { dtype: 'F32' });
    const f32 = result.tensors;
    tensors = kept.tensors.map((t, i) => (isBlock(kept.metadata.get(`gguf.type.${t.name}`) ?? 'U8') ? f32[i]! : t));
  }
  const config = JSON.stringify(result.config, null, 2) + '\n';
  // Llama 3.1's scaling lives in this tensor; its factors do not give back the config's parameters.
  const warnings: Finding[] = result.skipped.includes('rope_freqs.weight')
    ? [{ code: 'GgufRopeFreqsDropped', tensor: 'rope_freqs.weight', message: "rope_freqs.weight (Llama 3.1-style RoPE scaling) has no transformers tensor and config.json gets no rope_parameters from it: add the original model's rope_parameters (rope_type llama3, factor, low/high_freq_factor, original_max_position_embeddings) to config.json, or transformers computes other logits" }]
    : [];
  return { tensors, metadata: result.metadata, files: [{ name: CONFIG_FILE, bytes: TEXT.encode(config) }], warnings };
}

/**
 * A tokenizer file of the model: beside the weights, whether the input is the model directory or
 * its weights file (as config.json is read for the keys): `convert model.safetensors model.gguf`
 * and the page, which gets the dropped weights file as its entry, write the same GGUF as
 * `convert model/ model.gguf`.
 */
async function readJson(ctx: Context, name: string): Promise<unknown> {
  if (!(await ctx.has(name))) return undefined;
  const bytes = await ctx.bytes(name, MAX_TOKENIZER_BYTES, 'MlxInvalidConfig');
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (e) {
    throw new TensorportError('MlxInvalidConfig', `${ctx.path(name)} is not valid JSON: ${(e as Error).message}`, { path: ctx.path(name), cause: e });
  }
}

/** The float dtype most tensor bytes are in: the lossless default output type. */
function storedFloatType(tensors: readonly TensorDescriptor[]): string {
  const bytes = new Map<string, number>();
  for (const t of tensors) if (t.dtype === 'F32' || t.dtype === 'F16' || t.dtype === 'BF16') bytes.set(t.dtype, (bytes.get(t.dtype) ?? 0) + t.byteLength);
  return [...bytes].sort((a, b) => b[1] - a[1])[0]?.[0] ?? 'F32';
}

/** A float tensor of 2+ dimensions whose rows are whole blocks, in `type` (the rule of ggufFormat.write), measured into `probe` when given; anything else as it is. */
function toType(t: TensorDescriptor, typeName: string, probe?: ErrorProbe): TensorDescriptor {
  const q = ggmlTypeByName(typeName)!;
  const floating = t.dtype === 'F32' || t.dtype === 'F16' || t.dtype === 'BF16' || t.dtype === 'F64';
  if (!floating || t.shape.length < 2 || t.shape[t.shape.length - 1]! % q.blockSize !== 0) return t;
  return q.dtype && !probe ? castDescriptor(t, q.dtype as CastTarget, { strict: true }) : quantizeDescriptor(t, q, probe);
}

/** What toGguf hands the GGUF writer besides tensors: typed keys and the type of the rest. */
export interface GgufWrite {
  kv?: Array<[string, GgufValue]>;
}

const FLOAT_TYPES: readonly string[] = ['F32', 'F16', 'BF16'];

/** One warning for FP8 layers written as another type; its message reads the measured errors once they have streamed. */
function requantized(probes: ReadonlyMap<string, ErrorProbe>, type: string): Finding {
  return {
    code: 'QuantRequantized',
    get message() {
      let worst = -1;
      let where = '';
      let unmeasured = 0;
      for (const [name, p] of probes) {
        if (p.maxAbs === null) unmeasured++;
        else if (p.maxAbs > worst) [worst, where] = [p.maxAbs, name];
      }
      const measured = worst < 0 ? 'not measured (nothing streamed)' : `max |GGUF − FP8 value| = ${worst} (${where})`;
      return `${probes.size} FP8 block-scaled layer(s) written as ${type} (GGUF has no FP8 type; dequantized exactly to F32 first): ${measured}${unmeasured && worst >= 0 ? `; ${unmeasured} written in another type (rows not whole ${type} blocks)` : ''}`;
    },
  };
}

/** One warning for the layers that went over exactly, one per layer that did not (its error read once it has streamed). */
function layerFindings(reports: readonly MlxToGgufReport[]): Finding[] {
  const exact = new Map<string, number>();
  for (const r of reports) if (r.lossless) exact.set(r.type, (exact.get(r.type) ?? 0) + 1);
  const out: Finding[] = [];
  const n = reports.length - [...exact.values()].reduce((a, b) => a + b, 0);
  if (exact.size > 0) {
    const list = [...exact].map(([t, k]) => `${k} ${t}`).join(', ');
    out.push({ code: 'MlxBlocksKept', message: `${reports.length - n} MLX-quantized layer(s) written as GGUF blocks losslessly (${list}): codes, scales and biases carried over, max |GGUF − MLX f32| = 0` });
  }
  for (const r of reports) {
    if (r.lossless) continue;
    out.push({
      code: 'MlxBlocksRequantized',
      tensor: r.name,
      // The error is measured while the tensor streams to the file, after this finding is made.
      get message() {
        const err = r.maxAbsError === null ? 'not measured (the tensor was not written)' : `max |GGUF − MLX f32| = ${r.maxAbsError}`;
        return `re-quantized to ${r.type}: ${r.reason}; ${err}`;
      },
    });
  }
  return out;
}

/** MLX-quantized layers (U32 weight + scales [+ biases], config.json) as GGUF blocks or dequantized floats; other tensors as they are. */
async function mlxLayers(checkpoint: Checkpoint, config: Record<string, unknown> | undefined, type: string | undefined): Promise<{ tensors: readonly TensorDescriptor[]; warnings: Finding[]; blockType?: string }> {
  const layers = findQuantizedLayers(checkpoint, { config });
  if (layers.length === 0) return { tensors: checkpoint.tensors, warnings: [] };
  if (type !== undefined && FLOAT_TYPES.includes(type)) {
    const r = dequantizeCheckpoint(checkpoint, { config, dtype: type as FloatDType });
    return { tensors: r.tensors, warnings: [{ code: 'MlxDequantized', message: `${layers.length} MLX-quantized layer(s) dequantized to ${type} as MLX computes it (in the scales' dtype, then cast)` }] };
  }
  const byName = new Map(checkpoint.tensors.map((t) => [t.name, t]));
  const blocks = new Map<string, BlockTensor>();
  const reports: MlxToGgufReport[] = [];
  const bytes = new Map<string, number>();
  for (const l of layers) {
    const { tensor, report } = await mlxLayerToGguf(l, byName, type === undefined ? {} : { type });
    blocks.set(l.weight, tensor);
    reports.push(report);
    bytes.set(report.type, (bytes.get(report.type) ?? 0) + tensor.byteLength);
  }
  const consumed = new Set(layers.flatMap((l) => (l.biases ? [l.scales, l.biases] : [l.scales])));
  const tensors = checkpoint.tensors.filter((t) => !consumed.has(t.name)).map((t) => blocks.get(t.name) ?? t);
  return { tensors, warnings: layerFindings(reports), blockType: [...bytes].sort((a, b) => b[1] - a[1])[0]![0] };
}

/**
 * Plain tensors → GGUF. A directory (or file) with a config.json of a mapped architecture beside
 * it (Llama, Mistral, Qwen2: ggufArchitecture) gets llama.cpp's names, its q/k permutation and
 * `<arch>.*` keys (tokenizer keys from tokenizer.json when present);
 * anything else keeps its names, its metadata as STRING keys, and float matrices whose rows are
 * whole blocks are quantized to `type`. MLX-quantized layers become GGUF block tensors first
 * (mlxLayers), each reported in a warning: lossless, or re-quantized with its measured error.
 */
export function toGguf(options: ToGgufOptions = {}): Transform {
  if (options.type !== undefined && !canQuantize(options.type)) {
    throw new TensorportError('InvalidOption', `cannot write GGUF type ${JSON.stringify(options.type)}: the types are F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, TQ1_0, TQ2_0 and MXFP4`);
  }
  return async (checkpoint: Checkpoint, ctx: Context): Promise<Transformed> => {
    if (asGguf(checkpoint)) return checkpoint;
    const config = await readConfig(ctx);
    // GGUF has no FP8 type: block-scaled FP8 weights are dequantized exactly to F32, then written as `type`, the error measured.
    const fp8 = hfDequantizedTensors(checkpoint, config, 'F32');
    const probes = new Map((fp8?.layers ?? []).map((n): [string, ErrorProbe] => [n, { maxAbs: null }]));
    const mlx = await mlxLayers(fp8 ? { ...checkpoint, tensors: fp8.tensors } : checkpoint, config, options.type);
    const type = options.type ?? (fp8 ? 'BF16' : storedFloatType(mlx.tensors));
    if (fp8) mlx.warnings.push(requantized(probes, type));
    const architecture = ggufArchitecture(config);
    if (!architecture) {
      const typed = options.type ?? (fp8 ? type : undefined);
      const tensors = typed === undefined ? mlx.tensors : mlx.tensors.map((t) => toType(t, typed, probes.get(t.name)));
      return { tensors, metadata: checkpoint.metadata, warnings: mlx.warnings };
    }
    const tokenizer = await readJson(ctx, TOKENIZER_FILE);
    const tokenizerConfig = (await readJson(ctx, TOKENIZER_CONFIG_FILE)) as Record<string, unknown> | undefined;
    const r = llamaToGguf(mlx.tensors, config as LlamaConfig, {
      architecture,
      measure: probes,
      outtype: type as NonNullable<LlamaToGgufOptions['outtype']>,
      ...(mlx.blockType && options.type === undefined ? { fileType: mlx.blockType } : {}),
      ...(tokenizer === undefined ? {} : { tokenizer, ...(tokenizerConfig ? { tokenizerConfig } : {}) }),
    });
    const warnings = [...mlx.warnings];
    if (r.fallbacks.length) warnings.push({ code: 'GgufTypeFallback', message: `${r.fallbacks.length} tensor(s) written as F16: their rows are not whole ${type} blocks (${r.fallbacks.slice(0, 3).join(', ')})` });
    return { tensors: r.tensors, metadata: null, warnings, write: { kv: r.metadata } satisfies GgufWrite };
  };
}
