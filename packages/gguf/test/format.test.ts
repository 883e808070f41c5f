import { MemoryFolder, MemoryTarget, memoryContext, type TensorDescriptor } from '@tensorport/core';
import { describe, expect, it } from 'vitest';
import { dequantizeBlocks, ggufFormat, quantizeBlocks } from '../src/index.ts';
import { bytesOf, fixture } from './helpers.ts';

describe('ggufFormat', () => {
  it('sniffs GGUF by content, opens raw or dequantized, validates', async () => {
    const tiny = await fixture('tiny.gguf');
    const folder = new MemoryFolder([['model.bin', tiny], ['other.gguf', new Uint8Array(16)]]);
    const ctx = memoryContext(folder, 'model.bin');
    expect(await ggufFormat.sniff(ctx)).toBe(true);
    expect(await ggufFormat.sniff(memoryContext(folder, 'other.gguf'))).toBe(false);
    const raw = await ggufFormat.open(ctx);
    expect(raw.tensors.map((t) => [t.name, t.dtype, t.shape])).toEqual([['t.f32', 'F32', [2, 3]], ['t.q8', 'U8', [1, 34]]]);
    const deq = await ggufFormat.open(ctx, { dequantize: 'F32' });
    const q8 = deq.tensors[1]!;
    expect([q8.dtype, q8.shape]).toEqual(['F32', [1, 32]]);
    expect(Array.from(new Float32Array((await bytesOf(q8)).buffer))).toEqual(Array.from(dequantizeBlocks('Q8_0', await bytesOf(raw.tensors[1]!))));
    expect((await ggufFormat.validate!(ctx)).valid).toBe(true);
    const bad = await ggufFormat.validate!(memoryContext(new MemoryFolder([['x.gguf', tiny.subarray(0, 100)]]), 'x.gguf'));
    expect(bad.valid).toBe(false);
    expect(bad.errors[0]!.code).toBe('GgufTruncated');
  });

  it('writes tensors (quantizing 2-D floats on request) and string metadata, and reads them back', async () => {
    const x = new Float32Array(2 * 32).map((_, i) => Math.sin(i));
    const w: TensorDescriptor = { name: 'w', dtype: 'F32', shape: [2, 32], byteLength: 256, chunks: async function* () { yield new Uint8Array(x.buffer); } };
    const b: TensorDescriptor = { name: 'b', dtype: 'F32', shape: [32], byteLength: 128, chunks: async function* () { yield new Uint8Array(x.buffer, 0, 128); } };
    const target = new MemoryTarget('out.gguf');
    let progress = 0;
    await ggufFormat.write!([w, b], new Map([['general.architecture', 'test']]), target, { type: 'Q8_0', onProgress: (d) => (progress = d) });
    expect(progress).toBeGreaterThan(0);
    const back = await ggufFormat.open(await target.reopen());
    expect(back.metadata?.get('general.architecture')).toBe('test');
    expect(back.tensors.map((t) => [t.name, t.dtype, t.shape])).toEqual([['w', 'U8', [2, 34]], ['b', 'F32', [32]]]);
    expect(Buffer.from(await bytesOf(back.tensors[0]!)).equals(Buffer.from(quantizeBlocks('Q8_0', x)))).toBe(true);
  });
});
