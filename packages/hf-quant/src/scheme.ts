/**
 * Which quantization a Hugging Face checkpoint ships, from config.json's `quantization_config`
 * (transformers' HfQuantizer keys) and its tensors. FP8 block scaling (`quant_method: "fp8"`,
 * DeepSeek-V3/R1, Qwen3-FP8, transformers' FineGrainedFP8): each 2-D weight is F8_E4M3, with a
 * `<name>_scale_inv` tensor holding one float32 multiplier per `weight_block_size` block (128×128),
 * edge blocks smaller where a dimension is not a multiple. Other methods are named and refused
 * when asked to dequantize (docs/formats/quantized.md).
 */
import { TensorportError, type TensorDescriptor } from '@tensorport/core';

export interface Fp8BlockScheme {
  readonly method: 'fp8';
  readonly format: 'e4m3';
  /** Rows and columns per scale. */
  readonly blockSize: readonly [number, number];
  /** `activation_scheme` (dynamic, static): how the runtime scales activations; nothing to do with the weights. */
  readonly activationScheme: string | null;
}

/** A method tensorport recognises but does not dequantize (gptq, awq, compressed-tensors, bitsandbytes…). */
export interface OtherScheme {
  readonly method: string;
}

export type HfQuantScheme = Fp8BlockScheme | OtherScheme;

export function isFp8Block(s: HfQuantScheme | null): s is Fp8BlockScheme {
  return s?.method === 'fp8' && 'blockSize' in s;
}

/** One quantized weight and its scale tensor. */
export interface Fp8Layer {
  readonly weight: string;
  readonly scale: string;
}

const SCALE_SUFFIX = '_scale_inv';
const SCALE_DTYPES = new Set(['F32', 'BF16', 'F16']);

function invalid(message: string): TensorportError {
  return new TensorportError('QuantInvalidConfig', `config.json quantization_config: ${message}`);
}

/** The scheme config.json names, null when it names none (or only MLX's own section, which has no quant_method). FP8 with an unusable block size or format is QuantInvalidConfig / QuantUnsupported. */
export function hfQuantScheme(config: Record<string, unknown> | undefined): HfQuantScheme | null {
  const q = config?.quantization_config;
  if (q === undefined || q === null) return null;
  if (typeof q !== 'object' || Array.isArray(q)) throw invalid(`is ${JSON.stringify(q)}, not an object`);
  const qc = q as Record<string, unknown>;
  const method = qc.quant_method;
  // mlx-lm mirrors its own `quantization` section here, without a quant_method: not a Hub scheme.
  if (method === undefined) return null;
  if (typeof method !== 'string') throw invalid(`quant_method is ${JSON.stringify(method)}`);
  if (method !== 'fp8') return { method };
  const size = qc.weight_block_size;
  if (size === undefined || size === null) throw new TensorportError('QuantUnsupported', 'quant_method fp8 without weight_block_size (one scale per tensor) is not supported yet: only block scaling (weight_block_size, e.g. [128, 128])');
  if (!Array.isArray(size) || size.length !== 2 || !size.every((n) => Number.isInteger(n) && (n as number) > 0 && (n as number) <= 2 ** 20)) {
    throw invalid(`weight_block_size must be two positive integers, got ${JSON.stringify(size)}`);
  }
  const fmt = qc.fmt ?? 'e4m3';
  if (fmt !== 'e4m3') throw new TensorportError('QuantUnsupported', `fp8 fmt ${JSON.stringify(fmt)} is not supported: only e4m3 (F8_E4M3)`);
  const act = qc.activation_scheme;
  return { method: 'fp8', format: 'e4m3', blockSize: [size[0] as number, size[1] as number], activationScheme: typeof act === 'string' ? act : null };
}

/**
 * The FP8 layers of a checkpoint, each checked as a loader would use it: every F8_E4M3 tensor is a
 * 2-D weight with a `<name>_scale_inv` of F32/BF16/F16 and shape [⌈rows/bm⌉, ⌈cols/bn⌉], and every
 * scale has its weight. A violation is a TensorportError naming the tensor (nothing is written).
 */
export function fp8Layers(tensors: readonly TensorDescriptor[], scheme: Fp8BlockScheme): Fp8Layer[] {
  const byName = new Map(tensors.map((t) => [t.name, t]));
  const [bm, bn] = scheme.blockSize;
  const layers: Fp8Layer[] = [];
  const paired = new Set<string>();
  for (const t of tensors) {
    if (t.dtype !== 'F8_E4M3') continue;
    const scaleName = t.name + SCALE_SUFFIX;
    const scale = byName.get(scaleName);
    if (!scale) throw new TensorportError('QuantMissingScale', `${t.name} is F8_E4M3 but ${scaleName} is missing: its values cannot be recovered`, { tensor: t.name });
    if (t.shape.length !== 2) throw new TensorportError('QuantUnsupported', `${t.name} has shape [${t.shape.join(', ')}]: block-scaled FP8 weights are 2-D`, { tensor: t.name });
    const want = [Math.ceil(t.shape[0]! / bm), Math.ceil(t.shape[1]! / bn)];
    if (!SCALE_DTYPES.has(scale.dtype)) throw new TensorportError('QuantScaleMismatch', `${scaleName} is ${scale.dtype}; a scale is F32, BF16 or F16`, { tensor: scaleName });
    if (scale.shape.length !== 2 || scale.shape[0] !== want[0] || scale.shape[1] !== want[1]) {
      throw new TensorportError('QuantScaleMismatch', `${scaleName} has shape [${scale.shape.join(', ')}]; ${t.name} [${t.shape.join(', ')}] in ${bm}×${bn} blocks needs [${want.join(', ')}]`, { tensor: scaleName });
    }
    layers.push({ weight: t.name, scale: scaleName });
    paired.add(scaleName);
  }
  for (const t of tensors) {
    if (t.name.endsWith(SCALE_SUFFIX) && !paired.has(t.name)) {
      throw new TensorportError('QuantScaleMismatch', `${t.name} scales no F8_E4M3 weight (${t.name.slice(0, -SCALE_SUFFIX.length)} is ${byName.get(t.name.slice(0, -SCALE_SUFFIX.length))?.dtype ?? 'missing'})`, { tensor: t.name });
    }
  }
  return layers;
}
