import { describe, expect, it } from 'vitest';
import { castDescriptor, castTensors, isCastable, type CastTarget } from '../src/cast.ts';
import {
  bf16ArrayToF16,
  bf16BitsToF32,
  f16ArrayToBf16,
  f16BitsToF32,
  f32ArrayToBf16,
  f32ArrayToF16,
  f32BitsToBf16,
  f32BitsToF16,
  f64ArrayToBf16,
  f64ArrayToF16,
  f64ArrayToF32,
} from '../src/float16.ts';
import { DTYPES, TensorportError, type TensorDescriptor } from '../src/index.ts';
import { collect, memTensor } from './helpers/mem-tensor.ts';
import { requirePython, runPythonBytes } from './helpers/python.ts';

// ---- independent references: decode by formula, round by comparing exact distances ----

/** Value of a binary float with `m` mantissa bits and bias `bias`, by the textbook formula. */
function decode(bits: number, mBits: number, eBits: number): number {
  const sign = bits >>> (mBits + eBits) ? -1 : 1;
  const e = (bits >>> mBits) & ((1 << eBits) - 1);
  const m = bits & ((1 << mBits) - 1);
  const bias = (1 << (eBits - 1)) - 1;
  if (e === (1 << eBits) - 1) return m ? NaN : sign * Infinity;
  if (e === 0) return sign * m * 2 ** (1 - bias - mBits);
  return sign * (1 + m / 2 ** mBits) * 2 ** (e - bias);
}
const F16 = { m: 10, e: 5, inf: 0x7c00 };
const BF16 = { m: 7, e: 8, inf: 0x7f80 };

/**
 * Round-to-nearest-even of a double into a 16-bit format: binary search the positive finite values
 * (bits order = value order), treating the Inf pattern as 2^(emax+1) as IEEE overflow does.
 * Distances between a double and its neighbours here are exact in double arithmetic.
 */
function roundRef(v: number, fmt: { m: number; e: number; inf: number }): number {
  const signBit = 1 << (fmt.m + fmt.e);
  if (Number.isNaN(v)) return -1;
  const sign = v < 0 || Object.is(v, -0) ? signBit : 0;
  const a = Math.abs(v);
  const table = valueTable(fmt);
  const value = (b: number): number => table[b]!;
  if (a >= value(fmt.inf)) return sign | fmt.inf;
  let lo = 0;
  let hi = fmt.inf; // value(lo) <= a < value(hi)
  while (hi - lo > 1) {
    const mid = (lo + hi) >>> 1;
    if (value(mid) <= a) lo = mid;
    else hi = mid;
  }
  const dLo = a - value(lo);
  const dHi = value(hi) - a;
  const pick = dLo < dHi ? lo : dHi < dLo ? hi : lo % 2 === 0 ? lo : hi;
  return sign | pick;
}

const tables = new Map<object, Float64Array>();
/** Positive values by bit pattern, with the Inf pattern standing for 2^(emax+1). */
function valueTable(fmt: { m: number; e: number; inf: number }): Float64Array {
  let t = tables.get(fmt);
  if (!t) {
    t = new Float64Array(fmt.inf + 1).map((_, b) => (b === fmt.inf ? 2 ** (1 << (fmt.e - 1)) : decode(b, fmt.m, fmt.e)));
    tables.set(fmt, t);
  }
  return t;
}

const f32Of = (bits: number): number => new Float32Array(new Uint32Array([bits]).buffer)[0]!;
const bitsOfF32 = (v: number): number => new Uint32Array(new Float32Array([v]).buffer)[0]!;

function isNaN16(h: number, fmt: { m: number; inf: number }): boolean {
  return (h & 0x7fff) > fmt.inf;
}

// ---- inputs: every exponent with mantissas around every rounding position, ties, random ----

function f32Inputs(): Uint32Array {
  const out: number[] = [];
  for (let e = 0; e < 256; e++) {
    for (let k = 0; k < 23; k++) {
      for (const m of [1 << k, (1 << k) - 1, (1 << k) + 1, (3 << k) & 0x7fffff, ((1 << k) - 1) ^ 0x7fffff]) {
        out.push((e << 23) | (m & 0x7fffff), ((e << 23) | (m & 0x7fffff) | 0x80000000) >>> 0);
      }
    }
  }
  // Exact midpoints between neighbouring F16 / BF16 values, and one F32 ulp either side.
  for (const fmt of [F16, BF16]) {
    for (let h = 0; h < fmt.inf; h++) {
      const mid = (decode(h, fmt.m, fmt.e) + (h + 1 === fmt.inf ? 2 ** (2 ** (fmt.e - 1)) : decode(h + 1, fmt.m, fmt.e))) / 2;
      if (!Number.isFinite(Math.fround(mid))) continue;
      const b = bitsOfF32(mid);
      out.push(b, b + 1, b - 1, (b | 0x80000000) >>> 0);
    }
  }
  let x = 0x9e3779b9;
  for (let i = 0; i < 200_000; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out.push(x >>> 0);
  }
  return Uint32Array.from(out, (v) => v >>> 0);
}

function f64Inputs(): Float64Array {
  const out: number[] = [0, -0, Infinity, -Infinity, NaN, 65504, 65519.99, 65520, 65536, 3.4e38, 3.3961e38, 1e300, 5e-324, 2 ** -25, 2 ** -24, 2 ** -133, 2 ** -134, 2 ** -149, 2 ** -150];
  // Just off every F16/BF16 midpoint: rounding via F32 first would land exactly on the tie.
  for (const fmt of [F16, BF16]) {
    for (let h = 0; h < fmt.inf - 1; h += fmt === F16 ? 1 : 3) {
      const mid = (decode(h, fmt.m, fmt.e) + decode(h + 1, fmt.m, fmt.e)) / 2;
      out.push(mid, mid * (1 + 2 ** -40), mid * (1 - 2 ** -40), -mid * (1 + 2 ** -45));
    }
  }
  let x = 0x12345678;
  const rnd = (): number => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
  for (let i = 0; i < 100_000; i++) out.push((rnd() - 0.5) * 2 ** Math.floor(rnd() * 300 - 150));
  const bits = new Uint32Array(40_000);
  for (let i = 0; i < bits.length; i++) bits[i] = Math.floor(rnd() * 2 ** 32);
  return Float64Array.from([...out, ...new Float64Array(bits.buffer)]);
}

describe('16-bit → F32 → 16-bit round trips (all 65536 patterns)', () => {
  for (const [name, fmt, widen, narrow] of [
    ['F16', F16, f16BitsToF32, f32BitsToF16],
    ['BF16', BF16, bf16BitsToF32, f32BitsToBf16],
  ] as const) {
    it(`${name}: identity, NaNs stay NaN (sign and payload kept, made quiet)`, () => {
      const quiet = 1 << (fmt.m - 1);
      const bad: string[] = [];
      for (let h = 0; h < 65536; h++) {
        const wide = widen(h);
        const v = f32Of(wide);
        const ref = decode(h, fmt.m, fmt.e);
        const ok = Number.isNaN(ref)
          ? Number.isNaN(v) && wide >>> 31 === h >>> 15 && (wide & 0x400000) !== 0 && narrow(wide) === (h | quiet)
          : Object.is(v, ref) && narrow(wide) === h;
        if (!ok) bad.push(h.toString(16));
      }
      expect(bad.slice(0, 10)).toEqual([]);
    });
  }
  it('bulk cross-casts F16 ↔ BF16 agree with going through F32', () => {
    const all = new Uint16Array(65536).map((_, i) => i);
    const toBf = new Uint16Array(65536);
    const toF16 = new Uint16Array(65536);
    f16ArrayToBf16(all, toBf);
    bf16ArrayToF16(all, toF16);
    const bad: number[] = [];
    for (let h = 0; h < 65536; h++) {
      if (toBf[h] !== f32BitsToBf16(f16BitsToF32(h)) || toF16[h] !== f32BitsToF16(bf16BitsToF32(h))) bad.push(h);
    }
    expect(bad).toEqual([]);
  });
});

describe('narrowing against exact references', () => {
  const inputs = f32Inputs();
  it('F32 → F16 and F32 → BF16 round to nearest even, overflow to Inf, quiet NaN', () => {
    const h = new Uint16Array(inputs.length);
    const b = new Uint16Array(inputs.length);
    f32ArrayToF16(inputs, h);
    f32ArrayToBf16(inputs, b);
    const bad: string[] = [];
    for (let i = 0; i < inputs.length; i++) {
      const v = f32Of(inputs[i]!);
      const ok = Number.isNaN(v)
        ? isNaN16(h[i]!, F16) && isNaN16(b[i]!, BF16) && h[i]! >>> 15 === inputs[i]! >>> 31 && b[i]! >>> 15 === inputs[i]! >>> 31 && (h[i]! & 0x200) !== 0 && (b[i]! & 0x40) !== 0
        : h[i] === roundRef(v, F16) && b[i] === roundRef(v, BF16);
      if (!ok) bad.push(`${inputs[i]!.toString(16)} → F16 ${h[i]!.toString(16)} (want ${roundRef(v, F16).toString(16)}), BF16 ${b[i]!.toString(16)} (want ${roundRef(v, BF16).toString(16)})`);
    }
    expect(bad.slice(0, 10)).toEqual([]);
  });
  it('F64 → F16/BF16 round once (no double rounding through F32); F64 → F32 matches Math.fround', () => {
    const v = f64Inputs();
    const src = new Uint32Array(v.buffer);
    const h = new Uint16Array(v.length);
    const b = new Uint16Array(v.length);
    const f = new Uint32Array(v.length);
    f64ArrayToF16(src, h);
    f64ArrayToBf16(src, b);
    f64ArrayToF32(src, f);
    const bad: string[] = [];
    for (let i = 0; i < v.length; i++) {
      const x = v[i]!;
      const ok = Number.isNaN(x)
        ? isNaN16(h[i]!, F16) && isNaN16(b[i]!, BF16) && Number.isNaN(f32Of(f[i]!))
        : h[i] === roundRef(x, F16) && b[i] === roundRef(x, BF16) && Object.is(f32Of(f[i]!), Math.fround(x));
      if (!ok) bad.push(`${x}: F16 ${h[i]!.toString(16)} BF16 ${b[i]!.toString(16)} F32 ${f[i]!.toString(16)}`);
    }
    expect(bad.slice(0, 10)).toEqual([]);
    // Input that is only 4-byte aligned takes the integer path: same results.
    const shifted = new Uint32Array(src.length + 1);
    shifted.set(src, 1);
    const unaligned = shifted.subarray(1);
    const [h2, b2, f2] = [new Uint16Array(v.length), new Uint16Array(v.length), new Uint32Array(v.length)];
    f64ArrayToF16(unaligned, h2);
    f64ArrayToBf16(unaligned, b2);
    f64ArrayToF32(unaligned, f2);
    expect([Buffer.from(h2.buffer).equals(Buffer.from(h.buffer)), Buffer.from(b2.buffer).equals(Buffer.from(b.buffer)), Buffer.from(f2.buffer).equals(Buffer.from(f.buffer))]).toEqual([true, true, true]);
  });
});

// ---- the same inputs against numpy (F16, F32) and ml_dtypes (BF16) ----

const numpy = await requirePython(['numpy']);
// ml_dtypes is extra coverage (CI installs numpy and safetensors only); BF16 is also checked against the exact reference above.
const mlDtypes = await requirePython(['numpy', 'ml_dtypes'], { optional: true });

const ASTYPE = (src: string, dst: string) => `
import sys, numpy as np, warnings
warnings.simplefilter("ignore")
${dst.includes('bfloat16') ? 'import ml_dtypes' : ''}
x = np.frombuffer(sys.stdin.buffer.read(), dtype="${src}")
sys.stdout.buffer.write(x.astype(${dst}).tobytes())
`;

function compareNumpyResult(ours: Uint16Array | Uint32Array, theirs: Uint16Array | Uint32Array, isNaN: (x: number) => boolean, signBit: number, label: (i: number) => string): void {
  expect(theirs.length).toBe(ours.length);
  let nans = 0;
  const bad: string[] = [];
  for (let i = 0; i < ours.length; i++) {
    const a = ours[i]!;
    const b = theirs[i]!;
    // numpy keeps a signalling NaN signalling (or bumps the payload to 1); ours are quiet: compare NaN-ness and sign.
    if (isNaN(b)) {
      nans++;
      if (!isNaN(a) || (a & signBit) !== (b & signBit)) bad.push(`${label(i)}: ours ${a.toString(16)}, theirs ${b.toString(16)}`);
    } else if (a !== b) {
      bad.push(`${label(i)}: ours ${a.toString(16)}, theirs ${b.toString(16)}`);
    }
  }
  expect(bad.slice(0, 10)).toEqual([]);
  expect(nans).toBeGreaterThan(0);
}

describe.skipIf(!numpy)('numpy astype agrees', () => {
  it('F32 → float16 (every input above)', async () => {
    const inputs = f32Inputs();
    const ours = new Uint16Array(inputs.length);
    f32ArrayToF16(inputs, ours);
    const out = await runPythonBytes(numpy!.exe, ASTYPE('<f4', 'np.float16'), { input: new Uint8Array(inputs.buffer) });
    const theirs = new Uint16Array(out.buffer.slice(out.byteOffset, out.byteOffset + out.byteLength));
    compareNumpyResult(ours, theirs, (x) => isNaN16(x, F16), 0x8000, (i) => `F16 of f32 ${inputs[i]!.toString(16)}`);
  });
  it('F64 → float16 and float32 (numpy rounds F64 → F16 once, like us)', async () => {
    const v = f64Inputs();
    const h = new Uint16Array(v.length);
    const f = new Uint32Array(v.length);
    f64ArrayToF16(new Uint32Array(v.buffer), h);
    f64ArrayToF32(new Uint32Array(v.buffer), f);
    const outH = await runPythonBytes(numpy!.exe, ASTYPE('<f8', 'np.float16'), { input: new Uint8Array(v.buffer) });
    const outF = await runPythonBytes(numpy!.exe, ASTYPE('<f8', 'np.float32'), { input: new Uint8Array(v.buffer) });
    compareNumpyResult(h, new Uint16Array(outH.buffer.slice(outH.byteOffset, outH.byteOffset + outH.byteLength)), (x) => isNaN16(x, F16), 0x8000, (i) => `F16 of ${v[i]}`);
    compareNumpyResult(f, new Uint32Array(outF.buffer.slice(outF.byteOffset, outF.byteOffset + outF.byteLength)), (x) => (x & 0x7fffffff) > 0x7f800000, 0x80000000, (i) => `F32 of ${v[i]}`);
  });
});

describe.skipIf(!mlDtypes)('ml_dtypes bfloat16 agrees', () => {
  it('F32 → bfloat16 (every input above)', async () => {
    const inputs = f32Inputs();
    const ours = new Uint16Array(inputs.length);
    f32ArrayToBf16(inputs, ours);
    const out = await runPythonBytes(mlDtypes!.exe, ASTYPE('<f4', 'ml_dtypes.bfloat16'), { input: new Uint8Array(inputs.buffer) });
    const theirs = new Uint16Array(out.buffer.slice(out.byteOffset, out.byteOffset + out.byteLength));
    compareNumpyResult(ours, theirs, (x) => isNaN16(x, BF16), 0x8000, (i) => `BF16 of f32 ${inputs[i]!.toString(16)}`);
  });
});

// ---- descriptors ----

function f32Tensor(values: number[], name = 'w'): TensorDescriptor {
  return memTensor(name, 'F32', [values.length], new Uint8Array(new Float32Array(values).buffer));
}

/** A descriptor whose chunks are cut at awkward sizes (1, 3, 7, 2, 5 … bytes) and odd offsets. */
function ragged(t: TensorDescriptor, sizes = [1, 3, 7, 2, 5, 11, 4]): TensorDescriptor {
  return {
    ...t,
    async *chunks() {
      const all = await collect(t);
      const backing = new Uint8Array(all.byteLength + 1);
      backing.set(all, 1); // byteOffset 1: never aligned
      let pos = 0;
      for (let i = 0; pos < all.byteLength; i++) {
        const n = sizes[i % sizes.length]!;
        yield backing.subarray(1 + pos, 1 + Math.min(all.byteLength, pos + n));
        pos += n;
      }
    },
  };
}

describe('castDescriptor', () => {
  const values = Array.from({ length: 1000 }, (_, i) => Math.sin(i) * 2 ** (i % 40 - 20));
  it('re-chunks on element boundaries whatever the source chunking', async () => {
    for (const to of ['F16', 'BF16'] as const) {
      const expected = new Uint16Array(values.length);
      (to === 'F16' ? f32ArrayToF16 : f32ArrayToBf16)(new Uint32Array(new Float32Array(values).buffer), expected);
      const plain = castDescriptor(f32Tensor(values), to);
      expect(plain.dtype).toBe(to);
      expect(plain.byteLength).toBe(2000);
      for (const desc of [plain, castDescriptor(ragged(f32Tensor(values)), to)]) {
        for (const chunkSize of [undefined, 2, 6, 64, 1999]) {
          const chunks: Uint8Array[] = [];
          for await (const c of desc.chunks(chunkSize)) chunks.push(c);
          if (chunkSize) for (const c of chunks) expect(c.byteLength).toBeLessThanOrEqual(Math.max(2, chunkSize));
          const got = await collect(desc, chunkSize);
          expect(Buffer.from(got).equals(Buffer.from(expected.buffer))).toBe(true);
        }
      }
    }
  });
  it('F16 → F32 → F16 through descriptors is the identity on non-NaN data', async () => {
    const all = new Uint16Array(65536).map((_, i) => i).filter((h) => (h & 0x7fff) <= 0x7c00);
    const t = memTensor('h', 'F16', [all.length], new Uint8Array(all.buffer));
    const back = await collect(castDescriptor(castDescriptor(ragged(t), 'F32'), 'F16'));
    expect(Buffer.from(back).equals(Buffer.from(all.buffer))).toBe(true);
  });
  it('F64 sources', async () => {
    const v = new Float64Array([1, -2.5, 65520, 1e-5, NaN]);
    const t = memTensor('d', 'F64', [5], new Uint8Array(v.buffer));
    const h = new Uint16Array((await collect(castDescriptor(ragged(t), 'F16'))).buffer);
    expect([...h].map((x) => x.toString(16))).toEqual(['3c00', 'c100', '7c00', 'a8', '7e00']);
  });
  it('leaves non-float dtypes alone, or refuses them when strict', () => {
    for (const d of DTYPES) {
      const t = memTensor('x', d, [8]);
      const castable = ['F16', 'BF16', 'F32', 'F64'].includes(d);
      expect(isCastable(d)).toBe(castable);
      if (castable) continue;
      expect(castDescriptor(t, 'BF16')).toBe(t);
      expect(() => castDescriptor(t, 'BF16', { strict: true })).toThrow(TensorportError);
    }
    const f = f32Tensor([1]);
    expect(castDescriptor(f, 'F32')).toBe(f);
    expect(castTensors([f, memTensor('i', 'I32', [1])], 'F16').map((t) => t.dtype)).toEqual(['F16', 'I32']);
    try {
      castDescriptor(f, 'F64' as CastTarget);
      expect.unreachable();
    } catch (e) {
      expect((e as TensorportError).code).toBe('UnsupportedCast');
    }
  });
  it('a source that streams the wrong number of bytes fails with TensorByteLengthMismatch', async () => {
    for (const n of [3, 5]) {
      const liar: TensorDescriptor = { ...f32Tensor([1]), chunks: () => memTensor('x', 'U8', [n]).chunks() };
      await expect(collect(castDescriptor(liar, 'F16'))).rejects.toMatchObject({ code: 'TensorByteLengthMismatch' });
    }
  });
});
