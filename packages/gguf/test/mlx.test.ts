import { readFile } from 'node:fs/promises';
import { BytesSource, openSafetensors, type TensorDescriptor } from '@tensorport/core';
import { dequantizeFp, findQuantizedLayers, unpackCodes, packCodes, wordsOf, decodeFloats, encodeFloats, type FloatDType } from '@tensorport/mlx';
import { describe, expect, it } from 'vitest';
import { dequantizeBlocks, mlxAffineToGguf, mlxLayerToGguf, mlxMxfp4ToGguf } from '../src/index.ts';
import { bytesOf } from './helpers.ts';

const TINY = new URL('../../../fixtures/mlx/tiny-mixed/', import.meta.url);

/** MLX's f32 reconstruction s·q + b of a packed weight, row by row (the reference). */
async function mlxF32(weight: TensorDescriptor, scales: TensorDescriptor, biases: TensorDescriptor, bits: number, gs: number): Promise<Float32Array> {
  const packed = weight.shape[weight.shape.length - 1]!;
  const cols = (packed * 32) / bits;
  const rows = weight.byteLength / (packed * 4);
  const codes = unpackCodes(wordsOf(await bytesOf(weight)), bits, rows * cols);
  const s = decodeFloats(await bytesOf(scales), scales.dtype as FloatDType);
  const b = decodeFloats(await bytesOf(biases), biases.dtype as FloatDType);
  const out = new Float32Array(rows * cols);
  for (let i = 0; i < out.length; i++) {
    const g = Math.floor(i / gs);
    out[i] = Math.fround(s[g]! * codes[i]!) + b[g]!;
  }
  return out;
}

function mem(name: string, dtype: TensorDescriptor['dtype'], shape: number[], bytes: Uint8Array): TensorDescriptor {
  return { name, dtype, shape, byteLength: bytes.byteLength, chunks: async function* () { for (let i = 0; i < bytes.byteLength; i += 12) yield bytes.subarray(i, i + 12); } };
}

describe('MLX affine → GGUF blocks', () => {
  it('maps every affine layer of an mlx-lm style model: ≤ 5 bits exactly, 6 and 8 bits re-quantized with the error reported', async () => {
    const st = await openSafetensors(new BytesSource(new Uint8Array(await readFile(new URL('model.safetensors', TINY)))));
    const cfg = JSON.parse(await readFile(new URL('config.json', TINY), 'utf8')).quantization as Record<string, any>;
    const seen: string[] = [];
    for (const w of st.tensors) {
      if (!w.name.endsWith('.weight') || w.dtype !== 'U32') continue;
      const path = w.name.slice(0, -'.weight'.length);
      const q = { bits: cfg.bits, group_size: cfg.group_size, mode: 'affine', ...(cfg[path] ?? {}) };
      if (q.mode !== 'affine') continue;
      const scales = st.tensor(`${path}.scales`);
      const biases = st.tensor(`${path}.biases`);
      const { tensor, report } = await mlxAffineToGguf({ name: path, weight: w, scales, biases, bits: q.bits, groupSize: q.group_size });
      const ref = await mlxF32(w, scales, biases, q.bits, q.group_size);
      const got = dequantizeBlocks(tensor.ggmlType, await bytesOf(tensor, 100));
      expect(got.length).toBe(ref.length);
      seen.push(`${q.bits}:${report.type}:${report.lossless}`);
      if (report.lossless) {
        // Bit for bit: GGUF's f32 (d·q) + m is MLX's f32 s·q + b.
        expect(Buffer.from(got.buffer).equals(Buffer.from(ref.buffer)), path).toBe(true);
        expect(report.maxAbsError).toBe(0);
      } else {
        let max = 0;
        for (let i = 0; i < ref.length; i++) max = Math.max(max, Math.abs(got[i]! - ref[i]!));
        expect(report.maxAbsError, path).toBe(max);
        expect(max).toBeGreaterThan(0);
        expect(report.reason).toBeTruthy();
      }
    }
    expect(seen.sort()).toEqual(['2:Q4_1:true', '3:Q4_1:true', '4:Q4_1:true', '4:Q4_1:true', '4:Q4_1:true', '5:Q5_1:true', '6:Q8_0:false', '8:Q8_0:false']);
  });

  it('maps 8-bit groups onto Q8_0 exactly when every bias is −128·scale, and re-quantizes scales f16 cannot hold', async () => {
    const rows = 3;
    const cols = 64;
    const codes = new Uint8Array(rows * cols).map((_, i) => (i * 37 + 11) & 255);
    const s = new Float32Array(rows * 2).map((_, i) => (i % 2 ? -1 : 1) * 0.001 * (i + 1));
    const sh = encodeFloats(s, 'F16');
    const s16 = decodeFloats(sh, 'F16');
    const b16 = encodeFloats(s16.map((v) => -128 * v), 'F16');
    const weight = mem('w', 'U32', [rows, cols / 4], new Uint8Array(packCodes(codes, 8).buffer));
    const { tensor, report } = await mlxAffineToGguf({ name: 'w', weight, scales: mem('s', 'F16', [rows, 2], sh), biases: mem('b', 'F16', [rows, 2], b16), bits: 8, groupSize: 32 });
    expect(report).toMatchObject({ type: 'Q8_0', lossless: true, maxAbsError: 0 });
    const ref = await mlxF32(weight, mem('s', 'F16', [rows, 2], sh), mem('b', 'F16', [rows, 2], b16), 8, 32);
    const got = dequantizeBlocks('Q8_0', await bytesOf(tensor));
    // Equal values (an MLX 0 is +0; GGUF gives −0 for a negative scale).
    expect(Array.from(got).map((v) => v + 0)).toEqual(Array.from(ref).map((v) => v + 0));

    // An F32 scale of 1e-9 is no f16: re-quantized, lossy, to the fallback.
    const s32 = new Float32Array([1e-9, 0.5, 0.25, 0.125, 2, 3]);
    const r2 = await mlxAffineToGguf({ name: 'w', weight, scales: mem('s', 'F32', [rows, 2], new Uint8Array(s32.buffer)), biases: mem('b', 'F32', [rows, 2], new Uint8Array(new Float32Array(6).buffer)), bits: 8, groupSize: 32 }, { fallback: 'Q4_0' });
    expect(r2.report).toMatchObject({ type: 'Q4_0', lossless: false, maxAbsError: null });
    await bytesOf(r2.tensor);
    expect(r2.report.maxAbsError).toBeGreaterThan(0);
  });

  it('repacks mxfp4 losslessly into GGUF MXFP4 and refuses a non-finite scale', async () => {
    const st = await openSafetensors(new BytesSource(new Uint8Array(await readFile(new URL('model.safetensors', TINY)))));
    const weight = st.tensor('model.layers.0.mlp.experts_fp4.weight');
    const scales = st.tensor('model.layers.0.mlp.experts_fp4.scales');
    const t = await mlxMxfp4ToGguf({ name: 'experts', weight, scales });
    expect(t.logicalShape).toEqual([2, 8, 64]);
    const got = dequantizeBlocks('MXFP4', await bytesOf(t, 40));
    expect(new Set(got).size).toBeGreaterThan(8);
    const want = dequantizeFp(wordsOf(await bytesOf(weight)), await bytesOf(scales), { mode: 'mxfp4', dtype: 'F32' });
    expect(Array.from(got).map((v) => v + 0)).toEqual(Array.from(want).map((v) => v + 0));
    const ff = new Uint8Array(await bytesOf(scales));
    ff[3] = 0xff;
    await expect(mlxMxfp4ToGguf({ name: 'experts', weight, scales: mem('s', 'U8', [...scales.shape], ff) })).rejects.toMatchObject({ code: 'MlxNonFiniteWeight' });
  });

  it('streams the same blocks however the inputs are chunked, and re-quantizes when the asked type cannot hold the codes', async () => {
    const st = await openSafetensors(new BytesSource(new Uint8Array(await readFile(new URL('model.safetensors', TINY)))));
    const path = 'model.layers.0.mlp.switch_mlp.up_proj';
    const [w, s, b] = await Promise.all(['weight', 'scales', 'biases'].map((k) => st.tensor(`${path}.${k}`)).map(async (d) => ({ d, bytes: await bytesOf(d) })));
    const whole = await mlxAffineToGguf({ name: path, weight: w!.d, scales: s!.d, biases: b!.d, bits: 5, groupSize: 128 });
    // mem() cuts every input into 12-byte chunks: rows and groups split anywhere.
    const cut = await mlxAffineToGguf({ name: path, weight: mem('w', 'U32', [...w!.d.shape], w!.bytes), scales: mem('s', 'BF16', [...s!.d.shape], s!.bytes), biases: mem('b', 'BF16', [...b!.d.shape], b!.bytes), bits: 5, groupSize: 128 });
    expect(cut.report).toMatchObject({ type: 'Q5_1', lossless: true });
    expect(Buffer.from(await bytesOf(cut.tensor)).equals(Buffer.from(await bytesOf(whole.tensor, 100)))).toBe(true);

    const asked = await mlxAffineToGguf({ name: path, weight: w!.d, scales: s!.d, biases: b!.d, bits: 5, groupSize: 128 }, { type: 'Q4_1' });
    expect(asked.report).toMatchObject({ type: 'Q4_1', lossless: false, maxAbsError: null });
    expect(asked.report.reason).toMatch(/Q4_1 was asked for; 5-bit codes .* only into Q5_1/);
    const ref = await mlxF32(w!.d, s!.d, b!.d, 5, 128);
    const got = dequantizeBlocks('Q4_1', await bytesOf(asked.tensor));
    let max = 0;
    for (let i = 0; i < ref.length; i++) max = Math.max(max, Math.abs(got[i]! - ref[i]!));
    expect(asked.report.maxAbsError).toBe(max);
    expect(max).toBeGreaterThan(0);
  });

  it('an mxfp4 layer asked for another block type is re-quantized from MLX f32 values, its error measured', async () => {
    const st = await openSafetensors(new BytesSource(new Uint8Array(await readFile(new URL('model.safetensors', TINY)))));
    const config = JSON.parse(await readFile(new URL('config.json', TINY), 'utf8'));
    const layer = findQuantizedLayers(st, { config }).find((l) => l.mode === 'mxfp4')!;
    const byName = new Map(st.tensors.map((t) => [t.name, t]));
    const { tensor, report } = await mlxLayerToGguf(layer, byName, { type: 'Q8_0' });
    expect(report).toMatchObject({ type: 'Q8_0', lossless: false, maxAbsError: null });
    const got = dequantizeBlocks('Q8_0', await bytesOf(tensor));
    const want = dequantizeFp(wordsOf(await bytesOf(byName.get(layer.weight)!)), await bytesOf(byName.get(layer.scales)!), { mode: 'mxfp4', dtype: 'F32' });
    let max = 0;
    for (let i = 0; i < want.length; i++) max = Math.max(max, Math.abs(got[i]! - want[i]!));
    expect(report.maxAbsError).toBe(max);
    expect(max).toBeGreaterThan(0);
    const kept = await mlxLayerToGguf(layer, byName);
    expect(kept.report).toEqual({ name: layer.weight, type: 'MXFP4', lossless: true, maxAbsError: 0 });
  });
});
