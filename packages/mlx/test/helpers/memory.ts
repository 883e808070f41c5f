import { expect } from 'vitest';
import type { DType, TensorDescriptor } from '@tensorport/core';
import { encodeFloats, type FloatDType } from '../../src/index.ts';

/** A descriptor over bytes that streams them in deliberately awkward chunk sizes. */
export function memTensor(name: string, dtype: DType, shape: number[], bytes: Uint8Array, chunk = 7): TensorDescriptor {
  return {
    name,
    dtype,
    shape,
    byteLength: bytes.byteLength,
    async *chunks() {
      for (let i = 0; i < bytes.byteLength; i += chunk) yield bytes.slice(i, i + chunk);
    },
  };
}

export function floatTensor(name: string, dtype: FloatDType, shape: number[], values: ArrayLike<number>, chunk?: number): TensorDescriptor {
  return memTensor(name, dtype, shape, encodeFloats(values, dtype), chunk);
}

export async function collect(t: TensorDescriptor): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const c of t.chunks()) parts.push(c.slice());
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.byteLength;
  }
  expect(out.byteLength).toBe(t.byteLength);
  return out;
}

export function info(t: TensorDescriptor): { name: string; dtype: DType; shape: number[] } {
  return { name: t.name, dtype: t.dtype, shape: [...t.shape] };
}
