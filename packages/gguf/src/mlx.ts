import { TensorportError, f16BitsToF32, f32BitsToF16, type TensorDescriptor } from '@tensorport/core';
import { checkAffineParams, decodeFloats, unpackCodes, wordsOf, type FloatDType } from '@tensorport/mlx';
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

async function readAll(d: TensorDescriptor): Promise<Uint8Array> {
  const out = new Uint8Array(d.byteLength);
  let o = 0;
  for await (const c of d.chunks()) {
    if (o + c.byteLength > out.byteLength) break;
    out.set(c, o);
    o += c.byteLength;
  }
  if (o !== d.byteLength) throw new TensorportError('TensorByteLengthMismatch', `tensor ${JSON.stringify(d.name)} streamed ${o} bytes, expected ${d.byteLength}`, { tensor: d.name });
  return out;
}

function floatDtype(d: TensorDescriptor): FloatDType {
  if (d.dtype !== 'F16' && d.dtype !== 'BF16' && d.dtype !== 'F32') {
    throw new TensorportError('MlxInvalidQuantization', `${d.name} is ${d.dtype}; MLX scales and biases are F16, BF16 or F32`, { tensor: d.name });
  }
  return d.dtype;
}

/** f16 bits of v when v is exactly an f16 value, else -1. */
function exactHalf(v: number): number {
  if (!Number.isFinite(v)) return -1;
  const bits = f32BitsToF16(new Uint32Array(new Float32Array([v]).buffer)[0]!);
  return new Float32Array(new Uint32Array([f16BitsToF32(bits)]).buffer)[0] === v ? bits : -1;
}

const putHalf = (b: Uint8Array, o: number, h: number): void => {
  b[o] = h & 255;
  b[o + 1] = h >> 8;
};

/**
 * MLX affine weights → GGUF blocks, without a float round trip where the formulas allow it:
 * bits 2, 3, 4 → Q4_1 and bits 5 → Q5_1 (w = d·q + m is MLX's s·q + b; each MLX group's scale
 * and bias go to every 32-element block of the group), 8 bits → Q8_0 when every bias is exactly
 * −128·scale (then q − 128 is the signed code); always provided every scale and bias is an exact
 * f16 (always so for f16 models; checked value by value for bf16/f32). Otherwise the weights are
 * reconstructed in f32 and quantized to `fallback`, and the report gives the max abs error.
 */
export async function mlxAffineToGguf(w: MlxAffineWeight, options: MlxToGgufOptions = {}): Promise<{ tensor: BlockTensor; report: MlxToGgufReport }> {
  const { bits, groupSize, name } = w;
  checkAffineParams(bits, groupSize, name);
  if (w.weight.dtype !== 'U32' || w.weight.shape.length < 1) throw new TensorportError('MlxInvalidQuantization', `${w.weight.name} is not a packed U32 weight`, { tensor: w.weight.name });
  const packedCols = w.weight.shape[w.weight.shape.length - 1]!;
  const cols = (packedCols * 32) / bits;
  const rows = w.weight.byteLength / (packedCols * 4);
  const groups = cols / groupSize;
  if (!Number.isInteger(cols) || !Number.isInteger(groups) || !Number.isInteger(rows)) {
    throw new TensorportError('MlxInvalidQuantization', `${name}: ${packedCols} packed words per row do not hold whole groups of ${groupSize} ${bits}-bit codes`, { tensor: name });
  }
  const scales = decodeFloats(await readAll(w.scales), floatDtype(w.scales));
  const biases = decodeFloats(await readAll(w.biases), floatDtype(w.biases));
  if (scales.length !== rows * groups || biases.length !== rows * groups) {
    throw new TensorportError('MlxInvalidQuantization', `${name}: ${scales.length} scales and ${biases.length} biases for ${rows} rows of ${groups} groups`, { tensor: name });
  }

  let type: GgmlType | undefined;
  let reason: string | undefined;
  const sh = new Int32Array(scales.length);
  const bh = new Int32Array(scales.length);
  for (let i = 0; i < scales.length; i++) {
    sh[i] = exactHalf(scales[i]!);
    bh[i] = exactHalf(biases[i]!);
    if (sh[i]! < 0 || bh[i]! < 0) reason = `scale or bias ${i} (${scales[i]}, ${biases[i]}) is not an exact f16`;
  }
  if (!reason) {
    if (bits <= 4) type = ggmlTypeByName('Q4_1');
    else if (bits === 5) type = ggmlTypeByName('Q5_1');
    else if (bits === 8) {
      const i = scales.findIndex((s, k) => biases[k] !== Math.fround(-128 * s));
      if (i < 0) type = ggmlTypeByName('Q8_0');
      else reason = `8-bit group ${i} has bias ${biases[i]} ≠ −128·scale (Q8_0 has no offset)`;
    } else reason = `no GGUF block type holds ${bits}-bit codes with an offset`;
  }
  const lossless = type !== undefined;
  if (!type) {
    const fb = ggmlTypeByName(options.fallback ?? 'Q8_0');
    if (!fb || !canQuantize(fb)) throw new TensorportError('InvalidOption', `fallback ${JSON.stringify(options.fallback)} is not a type quantizeBlocks supports`, { tensor: name });
    if (cols % fb.blockSize !== 0) throw new TensorportError('GgufBlockMismatch', `${name}: ${cols} columns are not whole ${fb.name} blocks`, { tensor: name });
    type = fb;
  }
  const t = type;
  const report: MlxToGgufReport = { name, type: t.name, lossless, maxAbsError: lossless ? 0 : null, ...(reason && !lossless ? { reason } : {}) };
  const rowIn = packedCols * 4;
  const rowOut = (cols / t.blockSize) * t.typeSize;
  const shape = [...w.weight.shape.slice(0, -1), cols];

  const chunks = (chunkSize?: number): AsyncGenerator<Uint8Array> => {
    let row = 0;
    let maxErr = 0;
    const codes = new Uint8Array(cols);
    const x = new Float32Array(cols);
    const gen = mapUnits(w.weight, rowIn, rowOut, (src, n) => {
      const out = new Uint8Array(n * rowOut);
      for (let r = 0; r < n; r++, row++) {
        unpackCodes(wordsOf(src.subarray(r * rowIn, (r + 1) * rowIn)), bits, cols, codes);
        const o = r * rowOut;
        const g0 = row * groups;
        if (lossless) {
          for (let k = 0; k < cols / 32; k++) {
            const g = g0 + Math.floor((k * 32) / groupSize);
            blockFromCodes(t.name, codes, k * 32, sh[g]!, bh[g]!, out, o + k * t.typeSize);
          }
        } else {
          const f = Math.fround;
          for (let j = 0; j < cols; j++) {
            const g = g0 + Math.floor(j / groupSize);
            x[j] = f(scales[g]! * codes[j]!) + biases[g]!;
          }
          const q = quantizeBlocks(t, x, out.subarray(o, o + rowOut));
          const y = dequantizeBlocks(t, q);
          for (let j = 0; j < cols; j++) maxErr = Math.max(maxErr, Math.abs(y[j]! - x[j]!));
        }
      }
      return out;
    }, chunkSize);
    return (async function* () {
      yield* gen;
      if (!lossless) report.maxAbsError = maxErr;
    })();
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
  const scales = await readAll(w.scales);
  const bad = scales.indexOf(0xff);
  if (bad >= 0) throw new TensorportError('MlxNonFiniteWeight', `${name}: group ${bad} has the non-finite scale byte 0xFF, which GGUF MXFP4 cannot hold`, { tensor: name });
  const rowIn = packedCols * 4;
  const rowOut = blocks * 17;
  const shape = [...w.weight.shape.slice(0, -1), cols];
  return {
    name,
    dtype: 'U8',
    shape: [...shape.slice(0, -1), rowOut],
    byteLength: rows * rowOut,
    ggmlType: ggmlTypeByName('MXFP4')!,
    logicalShape: shape,
    chunks: (chunkSize?: number) => {
      let row = 0;
      const codes = new Uint8Array(cols);
      return mapUnits(w.weight, rowIn, rowOut, (src, n) => {
        const out = new Uint8Array(n * rowOut);
        for (let r = 0; r < n; r++, row++) {
          unpackCodes(wordsOf(src.subarray(r * rowIn, (r + 1) * rowIn)), 4, cols, codes);
          for (let k = 0; k < blocks; k++) {
            const o = r * rowOut + k * 17;
            out[o] = scales[row * blocks + k]!;
            for (let j = 0; j < 16; j++) out[o + 1 + j] = codes[32 * k + j]! | (codes[32 * k + j + 16]! << 4);
          }
        }
        return out;
      }, chunkSize);
    },
  };
}
