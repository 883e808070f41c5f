/**
 * Per-tensor costs stay small (issue 10 item 10): 10k tensors round trip through the .pt writer and
 * reader, and through .npz, with the same names, shapes and bytes. The 100k measurements (time, peak
 * RSS) are in bench/many-tensors.mjs and docs/benchmarks.md; here only correctness at a size where a
 * per-opcode allocation or a quadratic step would already show as seconds.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BytesSource, MemorySink, type TensorDescriptor } from '@tensorport/core';
import { FileSource } from '@tensorport/core/node';
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

  it('.pt from a file: opening it and reading every tensor takes a few hundred preads, not one per member', async () => {
    // Every tensor holds 16 bytes here, so that each one is read.
    const small = tensors().map((t, i): TensorDescriptor => ({ ...t, shape: [4], byteLength: 16, chunks: async function* () { yield new Uint8Array(16).fill(i & 0xff); } }));
    const sink = new MemorySink('many.pt');
    await writeTorchCheckpoint({ tensors: small, metadata: null }, sink);
    const dir = await mkdtemp(join(tmpdir(), 'tensorport-many-'));
    try {
      await writeFile(join(dir, 'many.pt'), sink.bytes());
      const source = await FileSource.open(join(dir, 'many.pt'));
      const back = await openTorchCheckpoint(source);
      let bytes = 0;
      for (const [i, t] of back.tensors.entries()) {
        for await (const c of t.chunks()) {
          expect(c.every((b) => b === (i & 0xff))).toBe(true);
          bytes += c.byteLength;
        }
      }
      expect(bytes).toBe(N * 16);
      // Each tensor's data is a small read, 10,000 of them walking forward (the local headers are
      // checked through the ZIP reader's own window): served from 256 KiB blocks (core's
      // small-blocks.ts), not one pread each (10,010 with blocks off).
      expect(source.preads).toBeLessThan(200);
      await back.close();
      await source.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
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
