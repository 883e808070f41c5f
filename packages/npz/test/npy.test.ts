import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BytesSource, MemorySink, isTensorportError, type DType } from '@tensorport/core';
import { openNpy, writeNpy } from '../src/index.ts';
import { bytesOf, fixture, fixturePath, fixtureSource, memTensor } from './helpers.ts';

/** descr written by numpy for each fixture → the dtype it must read as. */
const DTYPES: Record<string, DType> = {
  b1: 'BOOL', i1: 'I8', u1: 'U8', i2: 'I16', u2: 'U16', i4: 'I32', u4: 'U32', i8: 'I64', u8: 'U64',
  f2: 'F16', f4: 'F32', f8: 'F64', c8: 'C64',
};

/** generate.py's float values: arange(n) * 0.37 - 1.5, in C order. */
const floats = (n: number) => Array.from({ length: n }, (_, i) => i * 0.37 - 1.5);

describe('openNpy on numpy files', () => {
  for (const [file, dtype] of Object.entries(DTYPES)) {
    it(`${file}.npy → ${dtype}, data in place (range), writes back byte for byte`, async () => {
      const bytes = await fixture(`npy/${file}.npy`);
      const ck = await openNpy(new BytesSource(bytes, `${file}.npy`));
      const [t] = ck.tensors;
      expect(ck.format).toBe('npy');
      expect(t!.name).toBe(file);
      expect(t!.dtype).toBe(dtype);
      expect(t!.shape).toEqual([2, 3]);
      expect(t!.range?.offset).toBe(128);
      expect(await bytesOf(t!)).toEqual(bytes.subarray(128));
      const sink = new MemorySink();
      await writeNpy(t!, sink);
      expect(sink.bytes()).toEqual(bytes);
    });
  }

  it('swaps big-endian data while streaming, across chunk boundaries', async () => {
    const f4 = await openNpy(await fixtureSource('npy/be_f4.npy'));
    const t = f4.tensors[0]!;
    expect(t.range).toBeUndefined();
    for (const chunk of [undefined, 1, 3, 5]) {
      const got = await bytesOf(t, chunk);
      expect(Array.from(new Float32Array(got.buffer))).toEqual(floats(6).map(Math.fround));
    }
    const f8 = await bytesOf((await openNpy(await fixtureSource('npy/be_f8.npy'))).tensors[0]!, 5);
    expect(Array.from(new Float64Array(f8.buffer))).toEqual(floats(6));
    // complex64 swaps each 4-byte half, not the 8-byte pair
    const c8 = await bytesOf((await openNpy(await fixtureSource('npy/be_c8.npy'))).tensors[0]!);
    const le = await bytesOf((await openNpy(await fixtureSource('npy/c8.npy'))).tensors[0]!);
    expect(c8).toEqual(le);
    for (const f of ['i2', 'i8', 'f2']) {
      const be = await bytesOf((await openNpy(await fixtureSource(`npy/be_${f}.npy`))).tensors[0]!, 3);
      expect(be, f).toEqual(await bytesOf((await openNpy(await fixtureSource(`npy/${f}.npy`))).tensors[0]!));
    }
  });

  it('transposes Fortran order to C order (2-d, 3-d, and big-endian)', async () => {
    const t2 = (await openNpy(await fixtureSource('npy/fortran_2d.npy'))).tensors[0]!;
    expect(t2.shape).toEqual([3, 4]);
    expect(t2.range).toBeUndefined();
    expect(Array.from(new Float32Array((await bytesOf(t2, 5)).buffer))).toEqual(floats(12).map(Math.fround));
    const tb = (await openNpy(await fixtureSource('npy/fortran_be.npy'))).tensors[0]!;
    expect(Array.from(new Float64Array((await bytesOf(tb)).buffer))).toEqual(floats(12));
    // i2 values of shape (2,3,4) in C order are the first 24 of the (2,3)→… sequence: compare to the
    // C-order fixture's formula: (i * 7919 + 13) mod 65536 - 32768
    const t3 = (await openNpy(await fixtureSource('npy/fortran_3d.npy'))).tensors[0]!;
    const got = Array.from(new Int16Array((await bytesOf(t3)).buffer));
    expect(got).toEqual(Array.from({ length: 24 }, (_, i) => ((i * 7919 + 13) % 65536) - 32768));
  });

  it('refuses Fortran arrays past maxFortranBytes', async () => {
    await expect(openNpy(await fixtureSource('npy/fortran_2d.npy'), { maxFortranBytes: 47 })).rejects.toMatchObject({ code: 'NpyFortranTooLarge' });
  });

  it('reads 0-d scalars, empty arrays and long shapes', async () => {
    const s = (await openNpy(await fixtureSource('npy/scalar_f8.npy'))).tensors[0]!;
    expect(s.shape).toEqual([]);
    expect(new Float64Array((await bytesOf(s)).buffer)[0]).toBe(3.25);
    const b = (await openNpy(await fixtureSource('npy/scalar_b1.npy'))).tensors[0]!;
    expect([b.dtype, b.byteLength, (await bytesOf(b))[0]]).toEqual(['BOOL', 1, 1]);
    for (const [f, shape] of [['empty_0', [0]], ['empty_3x0', [3, 0]]] as const) {
      const e = (await openNpy(await fixtureSource(`npy/${f}.npy`))).tensors[0]!;
      expect(e.shape).toEqual(shape);
      expect(e.byteLength).toBe(0);
      expect(await bytesOf(e)).toEqual(new Uint8Array(0));
    }
    expect((await openNpy(await fixtureSource('npy/long_shape.npy'))).tensors[0]!.shape).toEqual(new Array(32).fill(1));
  });

  it('reads ml_dtypes bf16 (<V2) with a warning, <f1 as F8_E5M2, and <V1 only when named', async () => {
    const bf = await openNpy(await fixtureSource('npy/bf16.npy'));
    expect(bf.tensors[0]!.dtype).toBe('BF16');
    expect(bf.warnings.map((w) => w.code)).toEqual(['NpyV2AsBF16']);
    const raw = await bytesOf(bf.tensors[0]!);
    // bf16 is the top half of the float32 bit pattern: check against the formula
    const f32 = new Float32Array(floats(6));
    const top = Array.from(new Uint16Array(f32.buffer).filter((_, i) => i % 2 === 1));
    const got = Array.from(new Uint16Array(raw.buffer));
    got.forEach((v, i) => expect(Math.abs(v - top[i]!)).toBeLessThanOrEqual(1));
    expect((await openNpy(await fixtureSource('npy/f8e5m2.npy'))).tensors[0]!.dtype).toBe('F8_E5M2');
    await expect(openNpy(await fixtureSource('npy/f8e4m3fn.npy'))).rejects.toMatchObject({ code: 'NpyUnsupportedDtype' });
    expect((await openNpy(await fixtureSource('npy/f8e4m3fn.npy'), { void1: 'F8_E4M3' })).tensors[0]!.dtype).toBe('F8_E4M3');
    await expect(openNpy(await fixtureSource('npy/f8e4m3fn.npy'), { void1: 'F32' })).rejects.toMatchObject({ code: 'NpyUnsupportedDtype' });
  });

  it('refuses every kind safetensors cannot hold, naming it', async () => {
    const names: Record<string, RegExp> = {
      refuse_O: /object/, refuse_struct: /structured/, refuse_U: /string/, refuse_S: /string/, refuse_M8: /datetime64/,
      refuse_m8: /timedelta64/, refuse_c16: /complex128.*C64/, refuse_f16: /long double/, refuse_V8: /raw void/,
    };
    const files = readdirSync(fixturePath('npy')).filter((f) => f.startsWith('refuse_'));
    expect(files.length).toBe(Object.keys(names).length);
    for (const [f, re] of Object.entries(names)) {
      const err = await openNpy(await fixtureSource(`npy/${f}.npy`)).catch((e: unknown) => e);
      expect(isTensorportError(err), f).toBe(true);
      expect(err).toMatchObject({ code: 'NpyUnsupportedDtype', tensor: f });
      expect((err as Error).message).toMatch(re);
    }
  });

  it('reads other writers: MLX-style unaligned header, v2.0 header (raised limit), v3.0 UTF-8 header', async () => {
    const mlx = (await openNpy(await fixtureSource('reference/mlx_style_emulated.npy'))).tensors[0]!;
    expect(mlx.range!.offset % 64).not.toBe(0);
    expect(Array.from(new Float32Array((await bytesOf(mlx)).buffer))).toEqual([0, 1, 2, 3, 4, 5]);
    await expect(openNpy(await fixtureSource('reference/v2_many_fields.npy'))).rejects.toMatchObject({ code: 'NpyHeaderTooLarge' });
    // with the limit raised the header parses (v2.0, 72 KB) and the structured descr is refused by name
    await expect(openNpy(await fixtureSource('reference/v2_many_fields.npy'), { maxHeaderSize: 100_000 })).rejects.toMatchObject({ code: 'NpyUnsupportedDtype' });
    await expect(openNpy(await fixtureSource('reference/v3_utf8_field.npy'))).rejects.toMatchObject({ code: 'NpyUnsupportedDtype' });
  });

  it('tolerates trailing bytes with a warning and refuses short data', async () => {
    const bytes = await fixture('npy/f4.npy');
    const longer = new Uint8Array([...bytes, 1, 2, 3, 4]);
    const ck = await openNpy(new BytesSource(longer, 'x.npy'));
    expect(ck.warnings.map((w) => w.code)).toEqual(['NpyTrailingBytes']);
    expect(await bytesOf(ck.tensors[0]!)).toEqual(bytes.subarray(128));
    for (let n = 0; n < bytes.byteLength; n++) {
      const err = await openNpy(new BytesSource(bytes.subarray(0, n))).catch((e: unknown) => e);
      expect((err as { code?: string }).code, `prefix ${n}`).toBe(n < 10 ? 'NpyInvalidMagic' : 'NpyTruncated');
    }
  });
});

describe('writeNpy', () => {
  it('writes the header numpy writes for every shape kind (compared to np.save output)', async () => {
    for (const f of ['scalar_f8', 'scalar_b1', 'empty_0', 'empty_3x0', 'long_shape', 'shape_1x1x1x1x1', 'bf16']) {
      const bytes = await fixture(`npy/${f}.npy`);
      const t = (await openNpy(new BytesSource(bytes, f))).tensors[0]!;
      const sink = new MemorySink();
      await writeNpy(t, sink);
      expect(sink.bytes(), f).toEqual(bytes);
    }
  });

  it('aborts the sink when the tensor holds fewer bytes than declared', async () => {
    const sink = new MemorySink();
    let aborted = false;
    sink.abort = async () => {
      aborted = true;
    };
    const t = { ...memTensor('x', 'F32', [4], new Uint8Array(16)), byteLength: 20, shape: [5] };
    await expect(writeNpy(t, sink)).rejects.toMatchObject({ code: 'TensorByteLengthMismatch' });
    expect(aborted).toBe(true);
  });

  it('refuses sub-byte dtypes and writes byte-wide float8 as <V1 with a warning', async () => {
    await expect(writeNpy(memTensor('x', 'F4', [2], new Uint8Array(1)), new MemorySink())).rejects.toMatchObject({ code: 'NpyUnsupportedDtype' });
    const sink = new MemorySink();
    const r = await writeNpy(memTensor('x', 'F8_E4M3', [2], new Uint8Array([1, 2])), sink);
    expect(r.warnings.map((w) => w.code)).toEqual(['NpyWroteV1']);
    expect(new TextDecoder().decode(sink.bytes().subarray(10, 30))).toBe("{'descr': '<V1', 'fo");
  });
});
