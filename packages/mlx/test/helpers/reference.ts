/**
 * An independent, deliberately plain transcription of the MLX affine quantize kernels (CPU
 * `quantize` in mlx/backend/cpu/quantized.cpp, Metal `affine_quantize`), as quoted in the notes.
 * It shares no code with src/: rounding helpers, the f16/bf16 casts (nearest value found by
 * binary search over every representable value) and bit packing are all re-done here.
 */
const f = Math.fround;

// --- casts by search over every value of the 16-bit format ----------------------------------
function decodeF16(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 31;
  const m = h & 1023;
  if (e === 31) return m ? NaN : s * Infinity;
  return e === 0 ? s * m * Math.pow(2, -24) : s * (1 + m / 1024) * Math.pow(2, e - 15);
}
function decodeBf16(h: number): number {
  const b = new DataView(new ArrayBuffer(4));
  b.setUint32(0, h << 16);
  return b.getFloat32(0);
}
function sortedFinite(decode: (h: number) => number): { values: number[]; bits: number[] } {
  const pairs: [number, number][] = [];
  for (let h = 0; h < 0x8000; h++) {
    const v = decode(h);
    if (Number.isFinite(v)) pairs.push([v, h]);
  }
  pairs.sort((a, b) => a[0] - b[0]);
  return { values: pairs.map((p) => p[0]), bits: pairs.map((p) => p[1]) };
}
const F16 = sortedFinite(decodeF16);
const BF16 = sortedFinite(decodeBf16);

/** Nearest representable value, ties to the one with an even last mantissa bit. */
function nearest(table: { values: number[]; bits: number[] }, x: number, inf: number): number {
  const a = Math.abs(x);
  const sign = x < 0 || Object.is(x, -0) ? -1 : 1;
  const v = table.values;
  let lo = 0;
  let hi = v.length - 1;
  if (a >= v[hi]!) {
    // Beyond the largest finite value: overflow when at or past the midpoint to the next binade.
    const top = v[hi]!;
    const ulp = top - v[hi - 1]!;
    return a >= top + ulp / 2 ? sign * inf : sign * top;
  }
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (v[mid]! <= a) lo = mid;
    else hi = mid;
  }
  const dl = a - v[lo]!;
  const dh = v[hi]! - a;
  const pick = dl < dh ? lo : dh < dl ? hi : (table.bits[lo]! & 1) === 0 ? lo : hi;
  return sign * v[pick]!;
}

export type Dt = 'F32' | 'F16' | 'BF16';
export function castRef(dt: Dt, x: number): number {
  if (dt === 'F32') return f(x);
  // bf16 is rounded from the f32 value (MLX converts float → bfloat16).
  return dt === 'F16' ? nearest(F16, x, Infinity) : nearest(BF16, f(x), Infinity);
}

// --- the kernel --------------------------------------------------------------------------------
function rint(x: number): number {
  const fl = Math.floor(x);
  const d = x - fl;
  if (d < 0.5) return fl;
  if (d > 0.5) return fl + 1;
  return fl % 2 === 0 ? fl : fl + 1;
}
function roundAway(x: number): number {
  return Math.sign(x) * Math.floor(Math.abs(x) + 0.5);
}

export interface RefResult {
  codes: number[];
  scales: number[];
  biases: number[];
  /** The f32 scales the codes were computed with. */
  scalesF32: number[];
  words: number[];
}

export function referenceQuantize(w: number[], groupSize: number, bits: number, variant: 'cpu' | 'gpu', dt: Dt): RefResult {
  const nBins = f(Math.pow(2, bits) - 1);
  const eps = f(1e-7);
  const codes: number[] = [];
  const scales: number[] = [];
  const biases: number[] = [];
  const scalesF32: number[] = [];
  for (let i = 0; i < w.length / groupSize; i++) {
    const g = w.slice(i * groupSize, (i + 1) * groupSize);
    let wMin = Infinity;
    let wMax = variant === 'cpu' ? -Infinity : 0;
    for (const v of g) {
      wMax = Math.max(wMax, v);
      wMin = Math.min(wMin, v);
    }
    const mask = Math.abs(wMin) > Math.abs(wMax);
    let scale = Math.max(f(f(wMax - wMin) / nBins), eps);
    scale = mask ? scale : -scale;
    const edge = mask ? wMin : wMax;
    const round = variant === 'cpu' ? rint : roundAway;
    const q0 = round(f(edge / scale));
    let bias = 0;
    if (q0 !== 0) {
      scale = f(edge / q0);
      bias = edge;
    }
    for (const v of g) {
      let q = round(f(f(v - bias) / scale));
      q = Math.min(Math.max(q, 0), nBins);
      codes.push(q);
    }
    scalesF32.push(scale);
    scales.push(castRef(dt, scale));
    biases.push(castRef(dt, bias));
  }
  // Pack: one LSB-first stream, bit p of the stream = bit p%32 of word p/32.
  const words: number[] = new Array((codes.length * bits) / 32).fill(0);
  codes.forEach((q, i) => {
    for (let k = 0; k < bits; k++) {
      if ((q >> k) & 1) {
        const p = i * bits + k;
        words[Math.floor(p / 32)] = (words[Math.floor(p / 32)]! + Math.pow(2, p % 32));
      }
    }
  });
  return { codes, scales, biases, scalesF32, words };
}
