import { TensorportError, f16BitsToF32, f32BitsToF16, type TensorDescriptor } from '@tensorport/core';
import {
  checkAffineParams, decodeFloats, dequantizeAffine, dequantizeCheckpoint, lockstep, rowsPerBlock, unpackCodes, wordsOf,
  type FloatDType, type QuantizedLayer,
} from '@tensorport/mlx';
import { mapUnits } from './blocks-stream.ts';
import { dequantizeBlocks } from './dequant/index.ts';
import { ggmlTypeByName, type GgmlType } from './ggml-types.ts';
import { canQuantize, quantizeBlocks } from './quant/quantize.ts';
import type { BlockTensor } from './transform.ts';

/** One MLX affine-quantized weight: packed U32 codes with per-group scales and biases. */
export interface MlxAffineWeight {
  /** Output tensor name. */
  name: string;
  /** U32 [rows, cols·bits/32]: each row an LSB-first bitstream of codes. */
  weight: TensorDescriptor;
  /** [rows, cols/groupSize] in F16, BF16 or F32. */
  scales: TensorDescriptor;
  biases: TensorDescriptor;
  bits: number;
  groupSize: number;
}

export interface MlxToGgufOptions {
  /** Block type when no lossless mapping exists (default Q8_0; any type quantizeBlocks supports). */
  fallback?: string;
  /**
   * The block type asked for (`--gguf-type`): kept as it is when it holds the layer exactly (Q4_1
   * for ≤ 4 bits, Q5_1 for ≤ 5, Q8_0 for 8 bits with b = −128·s, MXFP4 for mxfp4), otherwise the
   * layer is re-quantized to it from MLX's f32 values and the error measured.
   */
  type?: string;
}

export interface MlxToGgufReport {
  name: string;
  type: string;
  lossless: boolean;
  /** Why the weight is not lossless, when it is not. */
  reason?: string;
  /**
   * Largest |GGUF − MLX| over the weights, both reconstructed in f32 (MLX: s·q + b): 0 when
   * lossless; for a re-quantized weight, null until its tensor has been streamed once.
   */
  maxAbsError: number | null;
}

const FLOAT_BYTES: Record<FloatDType, number> = { F16: 2, BF16: 2, F32: 4 };

function floatDtype(d: TensorDescriptor): FloatDType {
  if (d.dtype !== 'F16' && d.dtype !== 'BF16' && d.dtype !== 'F32') {
    throw new TensorportError('MlxInvalidQuantization', `${d.name} is ${d.dtype}; MLX scales and biases are F16, BF16 or F32`, { tensor: d.name });
  }
  return d.dtype;
}

const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);

/** f16 bits of v when v is exactly an f16 value (±∞ and NaN carry over), else -1. */
function exactHalf(v: number): number {
  F32[0] = v;
  const bits = f32BitsToF16(U32[0]!);
  U32[0] = f16BitsToF32(bits);
  return F32[0] === v || (v !== v && F32[0] !== F32[0]) ? bits : -1;
}

const putHalf = (b: Uint8Array, o: number, h: number): void => {
  b[o] = h & 255;
  b[o + 1] = h >> 8;
};

function blockType(name: string, tensor: string): GgmlType {
  const t = ggmlTypeByName(name);
  if (!t || !canQuantize(t)) throw new TensorportError('InvalidOption', `${JSON.stringify(name)} is not a GGUF type that can be written`, { tensor });
  return t;
}

/** The affine block types that hold `bits`-bit codes with an offset exactly (Q8_0 only if b = −128·s, checked later). */
function exactAffineTypes(bits: number): string[] {
  return bits <= 4 ? ['Q4_1', 'Q5_1'] : bits === 5 ? ['Q5_1'] : bits === 8 ? ['Q8_0'] : [];
}

/**
 * Streams `ref` (F32 values) quantized to `t`, measuring the largest |dequantized − ref| into
 * `report.maxAbsError` once the stream ends.
 */
function requantized(ref: TensorDescriptor, shape: readonly number[], t: GgmlType, report: MlxToGgufReport): BlockTensor {
  const cols = shape[shape.length - 1]!;
  if (cols % t.blockSize !== 0) throw new TensorportError('GgufBlockMismatch', `${report.name}: ${cols} columns are not whole ${t.name} blocks`, { tensor: report.name });
  const rowOut = (cols / t.blockSize) * t.typeSize;
  const rows = shape.slice(0, -1).reduce((a, b) => a * b, 1);
  return {
    name: report.name,
    dtype: 'U8',
    shape: [...shape.slice(0, -1), rowOut],
    byteLength: rows * rowOut,
    ggmlType: t,
    logicalShape: [...shape],
    chunks: (chunkSize?: number) => {
      let maxErr = 0;
      const gen = mapUnits(ref, t.blockSize * 4, t.typeSize, (src, n) => {
        const x = new Float32Array(src.buffer, src.byteOffset, n * t.blockSize);
        const q = quantizeBlocks(t, x);
        const y = dequantizeBlocks(t, q);
        for (let j = 0; j < y.length; j++) maxErr = Math.max(maxErr, Math.abs(y[j]! - x[j]!));
        return q;
      }, chunkSize);
      return (async function* () {
        yield* gen;
        report.maxAbsError = maxErr;
      })();
    },
  };
}

/**
 * MLX affine weights → GGUF blocks, without a float round trip where the formulas allow it:
 * bits 2, 3, 4 → Q4_1 and bits 5 → Q5_1 (w = d·q + m is MLX's s·q + b; each MLX group's scale
 * and bias go to every 32-element block of the group), 8 bits → Q8_0 when every bias is exactly
 * −128·scale (then q − 128 is the signed code); always provided every scale and bias is an exact
 * f16 (always so for f16 models; checked value by value for bf16/f32). Otherwise the weights are
 * reconstructed in f32 and quantized to `type` (or `fallback`), and the report gives the max abs
 * error. Scales and biases are read a block of rows at a time: once to decide (only when they
 * are not f16 or the layer is 8-bit), then beside the codes while the tensor streams.
 */
export async function mlxAffineToGguf(w: MlxAffineWeight, options: MlxToGgufOptions = {}): Promise<{ tensor: BlockTensor; report: MlxToGgufReport }> {
  const { bits, groupSize, name } = w;
  checkAffineParams(bits, groupSize, name);
  if (w.weight.dtype !== 'U32' || w.weight.shape.length < 1) throw new TensorportError('MlxInvalidQuantization', `${w.weight.name} is not a packed U32 weight`, { tensor: w.weight.name });
  const sdt = floatDtype(w.scales);
  if (floatDtype(w.biases) !== sdt) throw new TensorportError('MlxInvalidQuantization', `${name}: scales are ${sdt} but biases ${w.biases.dtype}`, { tensor: name });
  const packedCols = w.weight.shape[w.weight.shape.length - 1]!;
  const cols = (packedCols * 32) / bits;
  const rows = w.weight.byteLength / (packedCols * 4);
  const groups = cols / groupSize;
  if (!Number.isInteger(cols) || !Number.isInteger(groups) || !Number.isInteger(rows)) {
    throw new TensorportError('MlxInvalidQuantization', `${name}: ${packedCols} packed words per row do not hold whole groups of ${groupSize} ${bits}-bit codes`, { tensor: name });
  }
  const sRow = groups * FLOAT_BYTES[sdt];
  if (w.scales.byteLength !== rows * sRow || w.biases.byteLength !== rows * sRow) {
    throw new TensorportError('MlxInvalidQuantization', `${name}: ${w.scales.byteLength} bytes of scales and ${w.biases.byteLength} of biases for ${rows} rows of ${groups} ${sdt} groups`, { tensor: name });
  }
  const rowIn = packedCols * 4;
  const block = rowsPerBlock(rows, cols);
  const params = [{ desc: w.scales, rowBytes: sRow }, { desc: w.biases, rowBytes: sRow }];

  const exact = exactAffineTypes(bits);
  let reason: string | undefined;
  let candidate: string | undefined = options.type === undefined ? exact[0] : exact.includes(options.type) ? options.type : undefined;
  if (!candidate) {
    reason = options.type !== undefined && exact.length > 0
      ? `${options.type} was asked for; ${bits}-bit codes with an offset go exactly only into ${exact.join(' or ')}`
      : `no GGUF block type holds ${bits}-bit codes with an offset`;
  } else if (sdt !== 'F16' || candidate === 'Q8_0') {
    // One pass over the parameters (not the codes) decides; nothing of it is kept.
    for await (const _ of lockstep(name, params, rows, block, ([sb, bb], row) => {
      const s = decodeFloats(sb!, sdt);
      const b = decodeFloats(bb!, sdt);
      for (let i = 0; i < s.length && !reason; i++) {
        const g = row * groups + i;
        if (exactHalf(s[i]!) < 0 || exactHalf(b[i]!) < 0) reason = `scale or bias ${g} (${s[i]}, ${b[i]}) is not an exact f16`;
        else if (candidate === 'Q8_0' && b[i] !== Math.fround(-128 * s[i]!)) reason = `8-bit group ${g} has bias ${b[i]} ≠ −128·scale (Q8_0 has no offset)`;
      }
      return sb!.subarray(0, 0);
    })) {
      void _;
      if (reason) break;
    }
    if (reason) candidate = undefined;
  }

  const lossless = candidate !== undefined;
  const t = blockType(candidate ?? options.type ?? options.fallback ?? 'Q8_0', name);
  const report: MlxToGgufReport = { name, type: t.name, lossless, maxAbsError: lossless ? 0 : null, ...(reason && !lossless ? { reason } : {}) };
  const shape = [...w.weight.shape.slice(0, -1), cols];
  const inputs = [{ desc: w.weight, rowBytes: rowIn }, ...params];

  if (!lossless) {
    // MLX's f32 reconstruction s·q + b (two f32 roundings), a block of rows at a time.
    const ref: TensorDescriptor = {
      name, dtype: 'F32', shape, byteLength: rows * cols * 4,
      chunks: () => lockstep(name, inputs, rows, block, ([wb, sb, bb]) => {
        const y = dequantizeAffine(wordsOf(wb!), decodeFloats(sb!, sdt), decodeFloats(bb!, sdt), { bits, groupSize, dtype: 'F32' });
        return new Uint8Array(y.buffer, y.byteOffset, y.byteLength);
      }),
    };
    return { tensor: requantized(ref, shape, t, report), report };
  }

  const rowOut = (cols / t.blockSize) * t.typeSize;
  const chunks = (): AsyncGenerator<Uint8Array> => {
    const codes = new Uint8Array(cols);
    return lockstep(name, inputs, rows, block, ([wb, sb, bb], _row, n) => {
      const s = decodeFloats(sb!, sdt);
      const b = decodeFloats(bb!, sdt);
      const out = new Uint8Array(n * rowOut);
      for (let r = 0; r < n; r++) {
        unpackCodes(wordsOf(wb!.subarray(r * rowIn, (r + 1) * rowIn)), bits, cols, codes);
        for (let k = 0; k < cols / 32; k++) {
          const g = r * groups + Math.floor((k * 32) / groupSize);
          blockFromCodes(t.name, codes, k * 32, exactHalf(s[g]!), exactHalf(b[g]!), out, r * rowOut + k * t.typeSize);
        }
      }
      return out;
    });
  };
  const tensor: BlockTensor = { name, dtype: 'U8', shape: [...shape.slice(0, -1), rowOut], byteLength: rows * rowOut, ggmlType: t, logicalShape: shape, chunks };
  return { tensor, report };
}

/** One GGUF block from 32 MLX codes at `c[at..]` with the group's f16 scale and bias bits. */
function blockFromCodes(type: string, c: Uint8Array, at: number, s: number, b: number, out: Uint8Array, o: number): void {
  if (type === 'Q8_0') {
    putHalf(out, o, s);
    for (let j = 0; j < 32; j++) out[o + 2 + j] = c[at + j]! ^ 0x80;
    return;
  }
  putHalf(out, o, s);
  putHalf(out, o + 2, b);
  let p = o + 4;
  if (type === 'Q5_1') {
    let qh = 0;
    for (let j = 0; j < 32; j++) qh |= (c[at + j]! >> 4) << j;
    out[p] = qh & 255;
    out[p + 1] = (qh >>> 8) & 255;
    out[p + 2] = (qh >>> 16) & 255;
    out[p + 3] = qh >>> 24;
    p += 4;
  }
  // GGML nibble order: byte j holds elements j and j + 16 (MLX packs 2j and 2j + 1).
  for (let j = 0; j < 16; j++) out[p + j] = (c[at + j]! & 15) | ((c[at + j + 16]! & 15) << 4);
}

/** One MLX `mxfp4` weight: packed U32 E2M1 codes [rows, cols/8] with U8 E8M0 scales [rows, cols/32]. */
export interface MlxMxfp4Weight {
  name: string;
  weight: TensorDescriptor;
  scales: TensorDescriptor;
}

/**
 * MLX mxfp4 → GGUF MXFP4, losslessly: both store an E8M0 byte per 32 elements and E2M1 codes (ggml's
 * doubled values with a scale of 2^(e−128) are MLX's 2^(e−127)·e2m1); only the nibble order changes.
 * A scale byte 0xFF (MLX's non-finite scale) has no GGUF meaning and is refused. Values match
 * MLX's f32 dequantization except the sign of zero (code 8 is −0 in MLX, +0 in ggml).
 */
export async function mlxMxfp4ToGguf(w: MlxMxfp4Weight): Promise<BlockTensor> {
  const { name } = w;
  if (w.weight.dtype !== 'U32' || w.scales.dtype !== 'U8' || w.weight.shape.length < 1) {
    throw new TensorportError('MlxInvalidQuantization', `${name}: an mxfp4 weight is U32 codes with U8 scales`, { tensor: name });
  }
  const packedCols = w.weight.shape[w.weight.shape.length - 1]!;
  const cols = packedCols * 8;
  const rows = w.weight.byteLength / (packedCols * 4);
  const blocks = cols / 32;
  if (!Number.isInteger(blocks) || !Number.isInteger(rows) || w.scales.byteLength !== rows * blocks) {
    throw new TensorportError('MlxInvalidQuantization', `${name}: ${w.scales.byteLength} scales for ${rows} rows of ${cols}`, { tensor: name });
  }
  const block = rowsPerBlock(rows, cols);
  // Refused before anything is written: one pass over the scale bytes, none kept.
  let seen = 0;
  for await (const c of lockstep(name, [{ desc: w.scales, rowBytes: blocks }], rows, block, ([sb]) => sb!)) {
    const bad = c.indexOf(0xff);
    if (bad >= 0) throw new TensorportError('MlxNonFiniteWeight', `${name}: group ${seen + bad} has the non-finite scale byte 0xFF, which GGUF MXFP4 cannot hold`, { tensor: name });
    seen += c.byteLength;
  }
  const rowIn = packedCols * 4;
  const rowOut = blocks * 17;
  const shape = [...w.weight.shape.slice(0, -1), cols];
  const inputs = [{ desc: w.weight, rowBytes: rowIn }, { desc: w.scales, rowBytes: blocks }];
  return {
    name,
    dtype: 'U8',
    shape: [...shape.slice(0, -1), rowOut],
    byteLength: rows * rowOut,
    ggmlType: ggmlTypeByName('MXFP4')!,
    logicalShape: shape,
    chunks: () => {
      const codes = new Uint8Array(cols);
      return lockstep(name, inputs, rows, block, ([wb, sb], _row, n) => {
        const out = new Uint8Array(n * rowOut);
        for (let r = 0; r < n; r++) {
          unpackCodes(wordsOf(wb!.subarray(r * rowIn, (r + 1) * rowIn)), 4, cols, codes);
          for (let k = 0; k < blocks; k++) {
            const o = r * rowOut + k * 17;
            out[o] = sb![r * blocks + k]!;
            for (let j = 0; j < 16; j++) out[o + 1 + j] = codes[32 * k + j]! | (codes[32 * k + j + 16]! << 4);
          }
        }
        return out;
      });
    },
  };
}

/**
 * One recognized MLX layer (findQuantizedLayers) as a GGUF block tensor named `layer.weight`:
 * affine through mlxAffineToGguf, mxfp4 to MXFP4 unless another `type` is asked for, and the
 * modes GGUF has no block for (mxfp8, nvfp4; mxfp4 with another type) re-quantized to `type`
 * (default `fallback`, Q8_0) from MLX's F32 dequantization, the error measured.
 */
export async function mlxLayerToGguf(
  layer: QuantizedLayer,
  byName: ReadonlyMap<string, TensorDescriptor>,
  options: MlxToGgufOptions = {},
): Promise<{ tensor: BlockTensor; report: MlxToGgufReport }> {
  const get = (n: string): TensorDescriptor => {
    const d = byName.get(n);
    if (!d) throw new TensorportError('MlxInvalidQuantization', `${layer.path}: ${n} is missing`, { tensor: n });
    return d;
  };
  const name = layer.weight;
  const weight = get(layer.weight);
  const scales = get(layer.scales);
  if (layer.mode === 'affine') {
    return mlxAffineToGguf({ name, weight, scales, biases: get(layer.biases!), bits: layer.bits, groupSize: layer.groupSize }, options);
  }
  if (layer.mode === 'mxfp4' && (options.type === undefined || options.type === 'MXFP4')) {
    const tensor = await mlxMxfp4ToGguf({ name, weight, scales });
    return { tensor, report: { name, type: 'MXFP4', lossless: true, maxAbsError: 0 } };
  }
  const t = blockType(options.type ?? options.fallback ?? 'Q8_0', name);
  const reason = options.type !== undefined && layer.mode === 'mxfp4' ? `${options.type} was asked for; mxfp4 goes exactly only into MXFP4` : `GGUF has no block type for ${layer.mode}`;
  const report: MlxToGgufReport = { name, type: t.name, lossless: false, reason, maxAbsError: null };
  const [ref] = dequantizeCheckpoint({ tensors: [weight, scales], metadata: null }, { mode: layer.mode, bits: layer.bits, groupSize: layer.groupSize, dtype: 'F32' }).tensors;
  if (ref!.dtype !== 'F32') throw new TensorportError('MlxUnsupportedQuantization', `${name}: ${layer.mode} dequantizes to ${ref!.dtype}, not F32`, { tensor: name });
  return { tensor: requantized(ref!, layer.shape, t, report), report };
}
