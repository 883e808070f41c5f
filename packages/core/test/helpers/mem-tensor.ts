import { byteLength, type DType } from '../../src/dtype.ts';
import type { TensorDescriptor } from '../../src/tensor.ts';

/** An in-memory tensor for writer tests; `chunks` yields copies so consumers may keep them. */
export function memTensor(name: string, dtype: DType, shape: number[], data?: Uint8Array): TensorDescriptor {
  const bytes = data ?? patternBytes(byteLength(dtype, shape), name.length);
  return {
    name,
    dtype,
    shape,
    byteLength: bytes.byteLength,
    async *chunks(chunkSize = 1 << 20) {
      for (let pos = 0; pos < bytes.byteLength; pos += chunkSize) yield bytes.slice(pos, pos + chunkSize);
    },
  };
}

/** Deterministic non-constant bytes, so misplaced data shows up in comparisons. */
export function patternBytes(n: number, seed = 0): Uint8Array {
  const out = new Uint8Array(n);
  let x = (seed * 2654435761 + 12345) >>> 0;
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

export async function collect(t: TensorDescriptor, chunkSize?: number): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const c of t.chunks(chunkSize)) parts.push(c.slice());
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let pos = 0;
  for (const p of parts) {
    out.set(p, pos);
    pos += p.byteLength;
  }
  return out;
}
