import { describe, expect, it } from 'vitest';
import type { TensorDescriptor } from '@tensorport/core';
import { dequantizeCheckpoint, quantizeCheckpoint, rowsPerBlock } from '../src/index.ts';

/** A big float tensor generated on the fly that records how many bytes were pulled from it. */
function counting(name: string, rows: number, cols: number) {
  const state = { pulled: 0 };
  const chunk = 1 << 16;
  const desc: TensorDescriptor = {
    name,
    dtype: 'F32',
    shape: [rows, cols],
    byteLength: rows * cols * 4,
    async *chunks() {
      for (let off = 0; off < rows * cols * 4; off += chunk) {
        const n = Math.min(chunk, rows * cols * 4 - off);
        const f = new Float32Array(n / 4);
        for (let i = 0; i < f.length; i++) f[i] = Math.sin(off / 4 + i);
        state.pulled += n;
        yield new Uint8Array(f.buffer);
      }
    },
  };
  return { desc, state };
}

describe('memory stays bounded by a block of rows', () => {
  it('quantize pulls one block of the source per output chunk', async () => {
    const rows = 3000;
    const cols = 1024;
    const { desc, state } = counting('big.weight', rows, cols);
    const q = quantizeCheckpoint({ tensors: [desc] }, { bits: 4, groupSize: 64 });
    const block = rowsPerBlock(rows, cols);
    expect(block).toBeLessThan(rows);
    let chunks = 0;
    for await (const c of q.tensors[0]!.chunks()) {
      chunks++;
      expect(c.byteLength).toBeLessThanOrEqual(block * cols / 2);
      // What has been read so far: the blocks produced, plus at most one source chunk of read-ahead.
      expect(state.pulled).toBeLessThanOrEqual(chunks * block * cols * 4 + (1 << 16));
    }
    expect(chunks).toBe(Math.ceil(rows / block));
    expect(state.pulled).toBe(rows * cols * 4);
  });

  it('a tensor whose stream ends early is a typed error, not a short output', async () => {
    const { desc } = counting('t.weight', 8, 64);
    const short: TensorDescriptor = { ...desc, chunks: async function* () { yield new Uint8Array(100); } };
    const q = quantizeCheckpoint({ tensors: [short] }, { bits: 4, groupSize: 64 });
    const it = q.tensors[0]!.chunks()[Symbol.asyncIterator]();
    await expect(it.next()).rejects.toMatchObject({ code: 'TensorByteLengthMismatch', tensor: 't.weight' });
  });

  it('a descriptor whose byteLength disagrees with its shape is refused', async () => {
    const q = quantizeCheckpoint({ tensors: [counting('a.weight', 4, 64).desc] });
    const lying = q.tensors.map((t) => (t.name === 'a.scales' ? { ...t, byteLength: t.byteLength + 2 } : t));
    const d = dequantizeCheckpoint({ tensors: lying, metadata: q.metadata });
    const it = d.tensors[0]!.chunks()[Symbol.asyncIterator]();
    await expect(it.next()).rejects.toMatchObject({ code: 'TensorByteLengthMismatch' });
  });
});
