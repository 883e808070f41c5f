import { TensorportError, type TensorDescriptor } from '@tensorport/core';
import { mapUnits } from '../blocks-stream.ts';
import { redescribe } from '../descriptor.ts';

/**
 * The row order of llama.cpp's Q/K layout within each head of `headDim` rows: GGUF row
 * h·hd + 2i + s holds HF row h·hd + s·hd/2 + i (rotate-half pairs become adjacent pairs).
 * `toGguf` false gives the inverse. Returns, for each output row of a head, its input row.
 */
export function qkRowOrder(headDim: number, toGguf: boolean): Int32Array {
  const half = headDim / 2;
  const order = new Int32Array(headDim);
  for (let i = 0; i < half; i++) {
    for (let s = 0; s < 2; s++) {
      const gguf = 2 * i + s;
      const hf = s * half + i;
      if (toGguf) order[gguf] = hf;
      else order[hf] = gguf;
    }
  }
  return order;
}

/**
 * `desc` with its rows (axis 0, `rowBytes` each) permuted per head as qkRowOrder says. Rows move
 * whole, so this works on float rows and on rows of quantized blocks alike. Streams whole heads
 * (headDim rows each), about a chunk at a time.
 */
export function permuteQK<T extends TensorDescriptor>(desc: T, heads: number, rowBytes: number, toGguf: boolean): T {
  const rows = rowBytes === 0 ? 0 : desc.byteLength / rowBytes;
  if (!Number.isInteger(rows) || heads <= 0 || rows % heads !== 0 || (rows / heads) % 2 !== 0) {
    throw new TensorportError('GgufInvalidModel', `tensor ${JSON.stringify(desc.name)}: ${rows} rows cannot be split into ${heads} heads of an even size`, { tensor: desc.name });
  }
  const headDim = rows / heads;
  const order = qkRowOrder(headDim, toGguf);
  const headBytes = headDim * rowBytes;
  return redescribe(desc, desc.name, (chunkSize?: number) =>
    mapUnits(desc, headBytes, headBytes, (src, n) => {
      const out = new Uint8Array(n * headBytes);
      for (let h = 0; h < n; h++) {
        const base = h * headBytes;
        for (let r = 0; r < headDim; r++) out.set(src.subarray(base + order[r]! * rowBytes, base + (order[r]! + 1) * rowBytes), base + r * rowBytes);
      }
      return out;
    }, chunkSize),
  );
}
