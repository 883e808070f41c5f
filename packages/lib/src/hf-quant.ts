/**
 * Quantized checkpoints as the Hub ships them, on the way in (@tensorport/hf-quant): with a dtype
 * asked (`convert … --dtype bf16`), FP8 block-scaled weights are dequantized while streaming and
 * config.json loses its quantization_config, so transformers loads the output as a plain model. A
 * method tensorport does not dequantize yet is refused rather than half-converted.
 */
import { editJsonObject, TensorportError, toFinding, type CastTarget, type Checkpoint, type Context, type Finding, type TensorDescriptor } from '@tensorport/core';
import { dequantizeFp8Tensors, fp8Layers, hfQuantScheme, isFp8Block } from '@tensorport/hf-quant';
import { MAX_MLX_CONFIG_BYTES, MLX_CONFIG_FILE, readConfig } from '@tensorport/mlx';
import type { Transform, Transformed } from './pipeline/transform.ts';

const TORCH_DTYPE: Readonly<Record<CastTarget, string>> = { F32: 'float32', F16: 'float16', BF16: 'bfloat16' };

/** config.json's own text, quantization_config removed and the dtype key(s) naming `dtype`; every other byte kept. */
async function plainConfig(ctx: Context, config: Record<string, unknown>, dtype: CastTarget): Promise<Uint8Array> {
  const text = new TextDecoder().decode(await ctx.bytes(MLX_CONFIG_FILE, MAX_MLX_CONFIG_BYTES, 'MlxInvalidConfig'));
  const changes = new Map<string, unknown>([['quantization_config', undefined]]);
  // transformers 5 writes `dtype`, older versions `torch_dtype`: whichever is there says the new one.
  for (const key of ['dtype', 'torch_dtype']) if (Object.hasOwn(config, key)) changes.set(key, TORCH_DTYPE[dtype]);
  return new TextEncoder().encode(editJsonObject(text, changes));
}

/** What `inspect` says of a Hub-quantized checkpoint: the method, and for FP8 blocks their layout and layer count. */
export interface HfQuantSummary {
  method: string;
  format?: string;
  blockSize?: readonly [number, number];
  activationScheme?: string | null;
  layers?: number;
  /** False for a method tensorport names but does not dequantize yet. */
  dequantizable: boolean;
}

/**
 * The scheme of the checkpoint in `ctx` (config.json's quantization_config) checked against its
 * tensors as convert would use them: the summary, and each problem as a finding naming the tensor
 * or config key. Nothing when the config names no quantization.
 */
export async function hfQuantCheck(ctx: Context, tensors: readonly TensorDescriptor[]): Promise<{ summary?: HfQuantSummary; problems: Finding[] }> {
  let scheme;
  try {
    scheme = hfQuantScheme(await readConfig(ctx));
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
    return { problems: [{ path: ctx.path(MLX_CONFIG_FILE), ...toFinding(e) }] };
  }
  if (scheme === null) return { problems: [] };
  if (!isFp8Block(scheme)) return { summary: { method: scheme.method, dequantizable: false }, problems: [] };
  const summary: HfQuantSummary = { method: 'fp8', format: scheme.format, blockSize: scheme.blockSize, activationScheme: scheme.activationScheme, dequantizable: true };
  try {
    summary.layers = fp8Layers(tensors, scheme).length;
    return { summary, problems: [] };
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
    return { summary, problems: [toFinding(e)] };
  }
}

/**
 * The tensors of a Hub-quantized checkpoint with its FP8 block layers dequantized to `dtype` and
 * their scales gone; null when config.json names no quantization. Another method is refused.
 */
export function hfDequantizedTensors(checkpoint: Checkpoint, config: Record<string, unknown> | undefined, dtype: CastTarget): { tensors: TensorDescriptor[]; layers: string[]; blockSize: readonly [number, number] } | null {
  const scheme = hfQuantScheme(config);
  if (scheme === null) return null;
  if (!isFp8Block(scheme)) {
    throw new TensorportError('QuantUnsupported', `config.json says quant_method ${JSON.stringify(scheme.method)}: dequantizing it is not supported yet (FP8 block scaling is); convert without --dtype copies the tensors as stored`);
  }
  return { ...dequantizeFp8Tensors(checkpoint.tensors, scheme, dtype), blockSize: scheme.blockSize };
}

/** The dequantizing step of `convert` when a dtype is asked: FP8 block scaling to `dtype`; anything else unchanged (or refused when quantized by another method). */
export function dequantizeHfQuantized(dtype: CastTarget): Transform {
  return async (checkpoint: Checkpoint, ctx: Context): Promise<Transformed> => {
    let config;
    try {
      config = await readConfig(ctx);
    } catch (e) {
      // A config.json beside the input that does not parse matters only when the tensors need it.
      if (!checkpoint.tensors.some((t) => t.name.endsWith('_scale_inv'))) return checkpoint;
      throw e;
    }
    const plain = hfDequantizedTensors(checkpoint, config, dtype);
    if (plain === null) return checkpoint;
    const [bm, bn] = plain.blockSize;
    return {
      tensors: plain.tensors,
      metadata: checkpoint.metadata,
      warnings: [{ code: 'QuantDequantized', message: `${plain.layers.length} FP8 layer(s) (e4m3, ${bm}×${bn} blocks) dequantized to ${dtype}: weight × weight_scale_inv in float32, then rounded; config.json without quantization_config` }],
      files: [{ name: MLX_CONFIG_FILE, bytes: await plainConfig(ctx, config!, dtype) }],
    };
  };
}
