import { TensorportError, f32BitsToBf16, f32BitsToF16 } from '@tensorport/core';
import { ggmlTypeByName, type GgmlType } from '../ggml-types.ts';
import { FP4_VALUES } from '../dequant/tables.ts';
import { e8m0Half } from '../dequant/legacy.ts';

// The reference quantizers as gguf-py 0.19.0 runs them (numpy float32, one rounding per operation,
// no fused multiply-add; see legacy.ts): codes come from the unrounded float32 scale, the scale is
// stored as f16 (round to nearest even). `x` holds n·blockSize values, `b` receives n blocks.

const f = Math.fround;
const scratch = new Float32Array(1);
const scratchBits = new Uint32Array(scratch.buffer);

function f32Bits(v: number): number {
  scratch[0] = v;
  return scratchBits[0]!;
}

function putHalf(b: Uint8Array, o: number, v: number): void {
  const h = f32BitsToF16(f32Bits(v));
  b[o] = h & 255;
  b[o + 1] = h >> 8;
}

/** numpy's np_roundf: half away from zero (floor(|x|) + floor(2·frac), with the sign). */
function roundAway(v: number): number {
  const a = Math.abs(v);
  const fl = Math.floor(a);
  return Math.sign(v) * (fl + Math.floor(2 * (a - fl)));
}

/** The signed value of the first element with the largest magnitude. */
function signedMax(x: Float32Array, e: number, len: number): number {
  let amax = 0;
  let max = 0;
  for (let j = 0; j < len; j++) {
    const v = x[e + j]!;
    if (Math.abs(v) > amax) {
      amax = Math.abs(v);
      max = v;
    }
  }
  return max;
}

function absMax(x: Float32Array, e: number, len: number): number {
  let amax = 0;
  for (let j = 0; j < len; j++) amax = Math.max(amax, Math.abs(x[e + j]!));
  return amax;
}

function minMax(x: Float32Array, e: number, len: number): [number, number] {
  let lo = x[e]!;
  let hi = lo;
  for (let j = 1; j < len; j++) {
    const v = x[e + j]!;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  return [lo, hi];
}

const inverse = (d: number): number => (d === 0 ? 0 : f(1 / d));

/**
 * numpy's float → uint8/int8 `astype` on x86-64 (a truncating conversion to int32, low byte kept):
 * NaN, ±Inf and out-of-range values give 0. They arise only from degenerate blocks, e.g. a
 * subnormal maximum whose reciprocal overflows.
 */
const toByte = (v: number): number => (Number.isFinite(v) && Math.abs(v) < 2 ** 31 ? Math.trunc(v) & 255 : 0);

/** Nibble layout of the 32-element types: byte j = code j | code j+16 << 4. */
function packNibbles(q: Uint8Array, b: Uint8Array, o: number): void {
  for (let j = 0; j < 16; j++) b[o + j] = (q[j]! & 15) | ((q[j + 16]! & 15) << 4);
}

function packHigh(q: Uint8Array, b: Uint8Array, o: number): void {
  let qh = 0;
  for (let j = 0; j < 32; j++) qh |= (q[j]! >> 4) << j;
  b[o] = qh & 255;
  b[o + 1] = (qh >>> 8) & 255;
  b[o + 2] = (qh >>> 16) & 255;
  b[o + 3] = qh >>> 24;
}

function q4_0(x: Float32Array, b: Uint8Array, n: number): void {
  const q = new Uint8Array(32);
  for (let k = 0; k < n; k++) {
    const e = k * 32;
    const d = f(signedMax(x, e, 32) / -8);
    const id = inverse(d);
    for (let j = 0; j < 32; j++) q[j] = Math.min(15, toByte(f(f(x[e + j]! * id) + 8.5)));
    putHalf(b, k * 18, d);
    packNibbles(q, b, k * 18 + 2);
  }
}

function q4_1(x: Float32Array, b: Uint8Array, n: number): void {
  const q = new Uint8Array(32);
  for (let k = 0; k < n; k++) {
    const e = k * 32;
    const [min, max] = minMax(x, e, 32);
    const d = f(f(max - min) / 15);
    const id = inverse(d);
    for (let j = 0; j < 32; j++) q[j] = Math.min(15, toByte(f(f(f(x[e + j]! - min) * id) + 0.5)));
    putHalf(b, k * 20, d);
    putHalf(b, k * 20 + 2, min);
    packNibbles(q, b, k * 20 + 4);
  }
}

function q5_0(x: Float32Array, b: Uint8Array, n: number): void {
  const q = new Uint8Array(32);
  for (let k = 0; k < n; k++) {
    const e = k * 32;
    const d = f(signedMax(x, e, 32) / -16);
    const id = inverse(d);
    for (let j = 0; j < 32; j++) q[j] = Math.min(31, toByte(f(f(x[e + j]! * id) + 16.5)));
    putHalf(b, k * 22, d);
    packHigh(q, b, k * 22 + 2);
    packNibbles(q, b, k * 22 + 6);
  }
}

function q5_1(x: Float32Array, b: Uint8Array, n: number): void {
  const q = new Uint8Array(32);
  for (let k = 0; k < n; k++) {
    const e = k * 32;
    const [min, max] = minMax(x, e, 32);
    const d = f(f(max - min) / 31);
    const id = inverse(d);
    for (let j = 0; j < 32; j++) q[j] = Math.min(31, toByte(f(f(f(x[e + j]! - min) * id) + 0.5)));
    putHalf(b, k * 24, d);
    putHalf(b, k * 24 + 2, min);
    packHigh(q, b, k * 24 + 4);
    packNibbles(q, b, k * 24 + 8);
  }
}

function q8_0(x: Float32Array, b: Uint8Array, n: number): void {
  for (let k = 0; k < n; k++) {
    const e = k * 32;
    const d = f(absMax(x, e, 32) / 127);
    const id = inverse(d);
    const o = k * 34;
    putHalf(b, o, d);
    for (let j = 0; j < 32; j++) b[o + 2 + j] = toByte(roundAway(f(x[e + j]! * id)));
  }
}

/** Ternary codes 0, 1, 2 for -1, 0, +1 of x/amax. */
function ternary(x: Float32Array, e: number, q: Uint8Array): number {
  const d = absMax(x, e, 256);
  const id = inverse(d);
  for (let j = 0; j < 256; j++) q[j] = (toByte(roundAway(f(x[e + j]! * id))) + 1) & 255;
  return d;
}

function tq2_0(x: Float32Array, b: Uint8Array, n: number): void {
  const q = new Uint8Array(256);
  for (let k = 0; k < n; k++) {
    const d = ternary(x, k * 256, q);
    const o = k * 66;
    for (let i = 0; i < 2; i++) {
      for (let l = 0; l < 32; l++) {
        let v = 0;
        for (let s = 0; s < 4; s++) v |= q[128 * i + 32 * s + l]! << (2 * s);
        b[o + 32 * i + l] = v;
      }
    }
    putHalf(b, o + 64, d);
  }
}

/** Base-3 digits (most significant first) scaled to a byte, rounding up: decodable by trit(). */
const packTrits = (v: number): number => Math.floor((v * 256 + 242) / 243);

function tq1_0(x: Float32Array, b: Uint8Array, n: number): void {
  const q = new Uint8Array(256);
  for (let k = 0; k < n; k++) {
    const d = ternary(x, k * 256, q);
    const o = k * 54;
    for (let m = 0; m < 32; m++) {
      let v = 0;
      for (let t = 0; t < 5; t++) v = v * 3 + q[32 * t + m]!;
      b[o + m] = packTrits(v);
    }
    for (let m = 0; m < 16; m++) {
      let v = 0;
      for (let t = 0; t < 5; t++) v = v * 3 + q[160 + 16 * t + m]!;
      b[o + 32 + m] = packTrits(v);
    }
    for (let j = 0; j < 4; j++) {
      let v = 0;
      for (let t = 0; t < 4; t++) v = v * 3 + q[240 + 4 * t + j]!;
      b[o + 48 + j] = packTrits(v * 3);
    }
    putHalf(b, o + 52, d);
  }
}

function mxfp4(x: Float32Array, b: Uint8Array, n: number): void {
  const kv = FP4_VALUES;
  const q = new Uint8Array(32);
  for (let k = 0; k < n; k++) {
    const e = k * 32;
    const amax = absMax(x, e, 32);
    // float32 log2 as numpy computes it: rounds up to k just below 2^k.
    const ex = amax > 0 ? (Math.floor(f(Math.log2(amax))) - 2 + 127) & 255 : 0;
    const d = e8m0Half(ex);
    for (let j = 0; j < 32; j++) {
      let best = 0;
      let err = Infinity;
      for (let i = 0; i < 16; i++) {
        const r = Math.abs(f(f(d * kv[i]!) - x[e + j]!));
        if (r < err) {
          err = r;
          best = i;
        }
      }
      q[j] = best;
    }
    const o = k * 17;
    b[o] = ex;
    packNibbles(q, b, o + 1);
  }
}

function plain(bitsOf: (bits: number) => number): (x: Float32Array, b: Uint8Array, n: number) => void {
  return (x, b, n) => {
    const u = new Uint32Array(x.buffer, x.byteOffset, n);
    for (let i = 0; i < n; i++) {
      const h = bitsOf(u[i]!);
      b[2 * i] = h & 255;
      b[2 * i + 1] = h >> 8;
    }
  };
}

function f32(x: Float32Array, b: Uint8Array, n: number): void {
  b.set(new Uint8Array(x.buffer, x.byteOffset, n * 4));
}

type Quantizer = (x: Float32Array, b: Uint8Array, n: number) => void;

/** What gguf.quants.quantize (0.19.0) implements. */
const QUANTIZERS: Readonly<Record<string, Quantizer>> = {
  F32: f32, F16: plain(f32BitsToF16), BF16: plain(f32BitsToBf16),
  Q4_0: q4_0, Q4_1: q4_1, Q5_0: q5_0, Q5_1: q5_1, Q8_0: q8_0, TQ1_0: tq1_0, TQ2_0: tq2_0, MXFP4: mxfp4,
};

export const QUANTIZABLE_TYPES: readonly string[] = Object.keys(QUANTIZERS);

export function canQuantize(type: GgmlType | string): boolean {
  return (typeof type === 'string' ? type : type.name) in QUANTIZERS;
}

/**
 * Quantizes float32 values (a whole number of blocks) to `type`, byte for byte as
 * `gguf.quants.quantize` (gguf 0.19.0) for finite input; F16 NaN payloads follow core's cast.
 */
export function quantizeBlocks(type: GgmlType | string, x: Float32Array, out?: Uint8Array): Uint8Array {
  const t = typeof type === 'string' ? ggmlTypeByName(type) : type;
  if (!t) throw new TensorportError('GgufUnknownType', `unknown ggml type ${JSON.stringify(type)}`);
  const qz = QUANTIZERS[t.name];
  if (!qz) throw new TensorportError('GgufUnsupportedType', `quantizing to ${t.name} is not supported (gguf-py cannot either)`);
  if (x.length % t.blockSize !== 0) throw new TensorportError('GgufBlockMismatch', `${x.length} values are not a whole number of ${t.name} blocks of ${t.blockSize}`);
  const n = x.length / t.blockSize;
  const b = out ?? new Uint8Array(n * t.typeSize);
  if (b.byteLength < n * t.typeSize) throw new RangeError(`output holds ${b.byteLength} bytes, ${n * t.typeSize} needed`);
  qz(x, b, n);
  return b;
}
