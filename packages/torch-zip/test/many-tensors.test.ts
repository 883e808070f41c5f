/**
 * Per-tensor costs stay small (issue 10 item 10): 10k tensors round trip through the .pt writer and
 * reader, and through .npz, with the same names, shapes and bytes. The 100k measurements (time, peak
 * RSS) are in bench/many-tensors.mjs and docs/benchmarks.md; here only correctness at a size where a
 * per-opcode allocation or a quadratic step would already show as seconds.
 */
import { describe, expect, it } from 'vitest';
import { BytesSource, MemorySink, type TensorDescriptor } from '@tensorport/core';
import { openNpz, writeNpz } from '@tensorport/npz';
import { openTorchCheckpoint, writeTorchCheckpoint } from '../src/index.ts';

const N = 10_000;

function tensors(): TensorDescriptor[] {
  return Array.from({ length: N }, (_, i) => {
    const bytes = i % 1000 === 0 ? new Uint8Array([i & 0xff, 1, 2, 3]) : new Uint8Array(0);
    return {
      name: `model.layers.${i >> 6}.experts.${i & 63}.w`,
      dtype: 'F32' as const,
      shape: bytes.byteLength ? [1] : [0],
      byteLength: bytes.byteLength,
      async *chunks() {
        if (bytes.byteLength) yield bytes;
      },
    };
  });
}

async function bytesOf(t: TensorDescriptor): Promise<number[]> {
  const out: number[] = [];
  for await (const c of t.chunks()) out.push(...c);
  return out;
}

describe(`${N} tensors`, () => {
  it('.pt: written and read back with every name, shape and the non-empty bytes', async () => {
    const input = tensors();
    const sink = new MemorySink('many.pt');
    await writeTorchCheckpoint({ tensors: input, metadata: null }, sink);
    const back = await openTorchCheckpoint(new BytesSource(sink.bytes()));
    expect(back.tensors.map((t) => t.name)).toEqual(input.map((t) => t.name));
    expect(back.tensors.filter((t) => t.byteLength > 0).map((t) => t.shape)).toEqual(Array.from({ length: N / 1000 }, () => [1]));
    expect(await bytesOf(back.tensors[3000]!)).toEqual([3000 & 0xff, 1, 2, 3]);
  }, 60_000);

  it('.npz: the same', async () => {
    const input = tensors();
    const sink = new MemorySink('many.npz');
    await writeNpz(input, sink);
    const back = await openNpz(new BytesSource(sink.bytes()));
    expect(back.tensors.map((t) => t.name)).toEqual(input.map((t) => t.name));
    expect(await bytesOf(back.tensors[9000]!)).toEqual([9000 & 0xff, 1, 2, 3]);
  }, 60_000);
});
