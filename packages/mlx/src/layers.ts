/**
 * Which tensors of a checkpoint form MLX quantized layers. As in mlx-lm's loader, a module X is
 * quantized iff `X.scales` exists next to a U32 `X.weight`; affine layers also have `X.biases`
 * (quantization offsets, never to be confused with the layer's own float `X.bias`).
 *
 * Bits, group size and mode are resolved per field, first hit wins: explicit options; config.json
 * (the module's own dict entry, complete on its own as `to_quantized(**dict)` reads it; else the
 * section's defaults, a section without `mode` meaning affine);
 * `__metadata__` `quantization_bits` / `quantization_group_size` / `quantization_mode`. A field
 * still unknown is derived from the shapes when they allow exactly one answer, else refused.
 */
import { TensorportError, type DType } from '@tensorport/core';
import { parseQuantizationConfig, parseQuantizationMetadata, type QuantMode, type QuantParams, type QuantizationConfig } from './config.ts';
import { FP_MODES } from './fp.ts';
import { AFFINE_BITS, AFFINE_GROUP_SIZES } from './affine.ts';

export interface TensorInfo {
  readonly name: string;
  readonly dtype: DType;
  readonly shape: readonly number[];
}

export interface QuantizedLayer extends QuantParams {
  /** Module path, e.g. `model.layers.0.self_attn.q_proj`. */
  path: string;
  weight: string;
  scales: string;
  /** Absent for the floating-point modes. */
  biases: string | null;
  /** Shape of the dequantized weight: the packed shape with the last dimension × 32 / bits. */
  shape: number[];
  /** Rows (product of all dimensions but the last) and dequantized columns. */
  rows: number;
  cols: number;
  scaleDtype: DType;
  /** Where bits and group size came from. */
  source: 'options' | 'config' | 'metadata' | 'shape';
}

export interface RecognizeOptions {
  bits?: number;
  groupSize?: number;
  mode?: QuantMode;
  /** The parsed config.json of the model directory, if any. */
  config?: unknown;
  /** `__metadata__` of the file; taken from the checkpoint when not given. */
  metadata?: ReadonlyMap<string, string> | null;
}

/** Bits accepted when a file or config says so; 1 is not MLX upstream but ships in the wild. */
const READABLE_BITS = [1, ...AFFINE_BITS];

function invalid(message: string, tensor: string): TensorportError {
  return new TensorportError('MlxInvalidQuantization', message, { tensor });
}

function shapeStr(shape: readonly number[]): string {
  return `[${shape.join(', ')}]`;
}

export function findQuantizedLayers(
  checkpoint: { readonly tensors: readonly TensorInfo[]; readonly metadata?: ReadonlyMap<string, string> | null },
  options: RecognizeOptions = {},
): QuantizedLayer[] {
  const byName = new Map<string, TensorInfo>();
  for (const t of checkpoint.tensors) byName.set(t.name, t);
  const config = parseQuantizationConfig(options.config);
  const meta = parseQuantizationMetadata(options.metadata === undefined ? checkpoint.metadata : options.metadata);
  const layers: QuantizedLayer[] = [];
  for (const t of checkpoint.tensors) {
    if (!t.name.endsWith('.weight')) continue;
    const path = t.name.slice(0, -'.weight'.length);
    const scales = byName.get(`${path}.scales`);
    const entry = config?.modules.get(path);
    if (!scales || t.dtype !== 'U32') {
      if (entry && !scales) {
        throw invalid(`config.json quantizes ${path} but ${path}.scales is missing`, t.name);
      }
      continue;
    }
    if (entry === false) {
      throw invalid(`config.json marks ${path} unquantized but it has a U32 weight and ${path}.scales`, t.name);
    }
    layers.push(recognize(path, t, scales, byName.get(`${path}.biases`) ?? null, options, config, entry ?? {}, meta));
  }
  return layers;
}

function recognize(
  path: string,
  weight: TensorInfo,
  scales: TensorInfo,
  biases: TensorInfo | null,
  options: RecognizeOptions,
  config: QuantizationConfig | null,
  entry: Partial<QuantParams>,
  meta: Partial<QuantParams>,
): QuantizedLayer {
  const name = weight.name;
  const ws = weight.shape;
  const ss = scales.shape;
  if (ws.length < 2) throw invalid(`${name} has shape ${shapeStr(ws)}: a quantized weight has at least 2 dimensions`, name);
  if (ss.length !== ws.length || ws.slice(0, -1).some((d, i) => d !== ss[i])) {
    throw invalid(`${scales.name} has shape ${shapeStr(ss)}, which does not match ${name} ${shapeStr(ws)} in all but the last dimension`, scales.name);
  }
  const wCols = ws[ws.length - 1]!;
  const sCols = ss[ss.length - 1]!;
  if (wCols === 0 || sCols === 0) throw invalid(`${name} has an empty last dimension`, name);
  if (biases && (biases.dtype !== scales.dtype || biases.shape.length !== ss.length || biases.shape.some((d, i) => d !== ss[i]))) {
    throw invalid(`${biases.name} is ${biases.dtype} ${shapeStr(biases.shape)} but ${scales.name} is ${scales.dtype} ${shapeStr(ss)}`, biases.name);
  }

  const fromConfig = <K extends keyof QuantParams>(f: K): QuantParams[K] | undefined => entry[f] ?? config?.defaults[f];
  let mode = options.mode ?? fromConfig('mode') ?? (config && (Object.keys(config.defaults).length > 0 || Object.keys(entry).length > 0) ? 'affine' : undefined) ?? meta.mode;
  if (mode === undefined) {
    // Nothing says: U8 scales without biases is one of the fp modes, told apart by wCols / sCols.
    if (biases) mode = 'affine';
    else if (scales.dtype === 'U8') {
      const ratio = wCols / sCols;
      mode = ratio === 2 ? 'nvfp4' : ratio === 4 ? 'mxfp4' : ratio === 8 ? 'mxfp8' : undefined;
      if (!mode) throw invalid(`${name} ${shapeStr(ws)} with U8 scales ${shapeStr(ss)} and no biases fits none of mxfp4, mxfp8, nvfp4`, name);
    } else {
      throw invalid(`${path} has ${scales.dtype} scales but no ${path}.biases`, name);
    }
  }
  if (mode === 'affine') {
    if (!biases) throw invalid(`${path} is affine-quantized but ${path}.biases is missing`, name);
    if (scales.dtype !== 'F16' && scales.dtype !== 'BF16' && scales.dtype !== 'F32') {
      throw invalid(`${scales.name} is ${scales.dtype}; affine scales are F16, BF16 or F32`, scales.name);
    }
  } else {
    if (biases) throw invalid(`${path} is ${mode}-quantized, which has no biases, but ${biases.name} exists`, biases.name);
    if (scales.dtype !== 'U8') throw invalid(`${scales.name} is ${scales.dtype}; ${mode} scales are U8`, scales.name);
  }

  let bits: number | undefined;
  let groupSize: number | undefined;
  let source: QuantizedLayer['source'];
  if (options.bits !== undefined || options.groupSize !== undefined) {
    source = 'options';
    bits = options.bits;
    groupSize = options.groupSize;
  } else if (fromConfig('bits') !== undefined || fromConfig('groupSize') !== undefined) {
    source = 'config';
    bits = fromConfig('bits');
    groupSize = fromConfig('groupSize');
  } else if (meta.bits !== undefined || meta.groupSize !== undefined) {
    source = 'metadata';
    bits = meta.bits;
    groupSize = meta.groupSize;
  } else {
    source = 'shape';
  }
  // mlx-lm records the affine defaults even for fp layers' siblings; the fp modes fix both.
  if (mode !== 'affine') {
    const fixed = FP_MODES[mode];
    if ((bits !== undefined && bits !== fixed.bits) || (groupSize !== undefined && groupSize !== fixed.groupSize)) {
      throw new TensorportError('MlxUnsupportedQuantization', `${mode} has ${fixed.bits} bits and group size ${fixed.groupSize}, but ${source} says ${bits ?? '?'} bits, group size ${groupSize ?? '?'}`, { tensor: name });
    }
    bits = fixed.bits;
    groupSize = fixed.groupSize;
  }

  // wCols·32 = bits·cols and cols = sCols·groupSize, so bits·groupSize = wCols·32 / sCols.
  const product = (wCols * 32) / sCols;
  if (bits === undefined && groupSize === undefined) {
    const fits = AFFINE_BITS.flatMap((b) => AFFINE_GROUP_SIZES.filter((g) => b * g === product).map((g) => [b, g] as const));
    if (fits.length === 0) throw invalid(`${name} ${shapeStr(ws)} with scales ${shapeStr(ss)} fits no MLX bits and group size`, name);
    if (fits.length > 1) {
      throw new TensorportError(
        'MlxAmbiguousQuantization',
        `${name} ${shapeStr(ws)} with scales ${shapeStr(ss)} fits ${fits.map(([b, g]) => `${b} bits/group ${g}`).join(', ')}, and neither options, config.json nor __metadata__ say which`,
        { tensor: name },
      );
    }
    [bits, groupSize] = fits[0]!;
  } else if (bits === undefined) {
    bits = product / groupSize!;
  } else if (groupSize === undefined) {
    groupSize = product / bits;
  }
  if (!Number.isInteger(bits) || !READABLE_BITS.includes(bits)) {
    throw new TensorportError('MlxUnsupportedQuantization', `${name}: ${bits} bits (from ${source}) is not a supported width`, { tensor: name });
  }
  if (mode === 'affine' && !AFFINE_GROUP_SIZES.includes(groupSize!)) {
    throw new TensorportError('MlxUnsupportedQuantization', `${name}: group size ${groupSize} (from ${source}) is not one of 32, 64, 128`, { tensor: name });
  }
  const gs = groupSize!;
  if ((wCols * 32) % bits !== 0 || (wCols * 32) / bits !== sCols * gs) {
    throw invalid(`${name} ${shapeStr(ws)} with scales ${shapeStr(ss)} does not fit ${bits} bits and group size ${gs} (from ${source})`, name);
  }
  const cols = (wCols * 32) / bits;
  const shape = [...ws.slice(0, -1), cols];
  const rows = ws.slice(0, -1).reduce((a, b) => a * b, 1);
  return { path, weight: name, scales: scales.name, biases: biases ? biases.name : null, mode, bits, groupSize: gs, shape, rows, cols, scaleDtype: scales.dtype, source };
}
