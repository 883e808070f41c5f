import { BytesSource, MemorySink, TensorportError, type TensorDescriptor } from '@tensorport/core';
import { describe, expect, it } from 'vitest';
import { dequantizeBlocks, gguf, openGguf, planGguf, quantizeBlocks, quantizeDescriptor, writeGguf, type GgufValue } from '../src/index.ts';
import { bytesOf, fixture } from './helpers.ts';

function mem(name: string, dtype: TensorDescriptor['dtype'], shape: number[], bytes: Uint8Array): TensorDescriptor {
  return { name, dtype, shape, byteLength: bytes.byteLength, chunks: async function* () { for (let i = 0; i < bytes.byteLength; i += 5) yield bytes.subarray(i, i + 5); } };
}

async function write(tensors: Parameters<typeof writeGguf>[0], kv: Iterable<[string, GgufValue]>, options?: Parameters<typeof writeGguf>[3]): Promise<Uint8Array> {
  const sink = new MemorySink();
  await writeGguf(tensors, kv, sink, options);
  return sink.bytes();
}

describe('writeGguf', () => {
  it('rewrites files made by GGUFWriter byte for byte (same layout, padding and order)', async () => {
    for (const name of ['tiny.gguf', 'kitchen.gguf']) {
      const original = await fixture(name);
      const g = await openGguf(new BytesSource(original));
      // kitchen has a nested array, which llama.cpp refuses: gguf-py writes it, so we may too on request.
      const out = await write(g.tensors, g.kv, { allowNestedArrays: true, chunkSize: 7 });
      expect(out.byteLength, name).toBe(original.byteLength);
      expect(Buffer.from(out).equals(Buffer.from(original)), name).toBe(true);
    }
  });

  it('refuses nested arrays by default, bad values and bad tensors, and aborts the sink', async () => {
    const g = await openGguf(new BytesSource(await fixture('kitchen.gguf')));
    await expect(write([], g.kv)).rejects.toMatchObject({ code: 'GgufInvalidValue' });
    await expect(write([], [['k', gguf.u8(256)]])).rejects.toMatchObject({ code: 'GgufInvalidValue' });
    await expect(write([], [['k', gguf.u32(1.5)]])).rejects.toMatchObject({ code: 'GgufInvalidValue' });
    await expect(write([], [['k', gguf.u64(-1)]])).rejects.toMatchObject({ code: 'GgufInvalidValue' });
    await expect(write([], [['k', gguf.str('\ud800')]])).rejects.toMatchObject({ code: 'GgufInvalidUtf8' });
    await expect(write([], [['', gguf.u8(1)]])).rejects.toMatchObject({ code: 'GgufInvalidKey' });
    await expect(write([], [['general.alignment', gguf.u32(48)]])).rejects.toMatchObject({ code: 'GgufInvalidAlignment' });
    const f = mem('t', 'F32', [2], new Uint8Array(8));
    await expect(write([f, f], [])).rejects.toMatchObject({ code: 'DuplicateTensorName' });
    await expect(write([{ ...f, name: 'x'.repeat(64) }], [])).rejects.toMatchObject({ code: 'GgufInvalidTensorInfo' });
    await expect(write([mem('u', 'U8', [2], new Uint8Array(2))], [])).rejects.toMatchObject({ code: 'GgufUnknownType' });
    await expect(write([{ ...f, byteLength: 4 }], [])).rejects.toMatchObject({ code: 'TensorByteLengthMismatch' });
    await expect(write([{ ...mem('q', 'U8', [34], new Uint8Array(34)), ggmlType: 'Q8_0', logicalShape: [33] }], [])).rejects.toMatchObject({ code: 'GgufBlockMismatch' });
    let aborted = false;
    const sink = new MemorySink();
    sink.abort = async () => {
      aborted = true;
    };
    const short: TensorDescriptor = { ...f, chunks: async function* () { yield new Uint8Array(4); } };
    await expect(writeGguf([short], [], sink)).rejects.toBeInstanceOf(TensorportError);
    expect(aborted).toBe(true);
  });

  it('writes general.alignment for a custom alignment and pads every tensor to it', async () => {
    const a = mem('a', 'F32', [3], new Uint8Array(12).fill(1));
    const b = mem('b', 'F16', [5], new Uint8Array(10).fill(2));
    const out = await write([a, b], [['general.architecture', gguf.str('test')]], { alignment: 128 });
    const g = await openGguf(new BytesSource(out));
    expect(g.alignment).toBe(128);
    expect(g.kv.get('general.alignment')).toEqual({ type: 'UINT32', value: 128 });
    expect(g.tensors.map((t) => t.fileOffset - g.dataOffset)).toEqual([0, 128]);
    expect(out.byteLength).toBe(g.dataOffset + 256);
    const plan = planGguf([a, b], [], { alignment: 128 });
    expect(plan.total).toBe(plan.header.byteLength + 256);
  });

  it('streams quantized tensors from descriptors and reads them back', async () => {
    const x = new Float32Array(4 * 64);
    for (let i = 0; i < x.length; i++) x[i] = Math.sin(i * 0.37) * 0.3;
    const src = mem('w', 'F32', [4, 64], new Uint8Array(x.buffer));
    const q = quantizeDescriptor(src, 'Q8_0');
    expect(q.shape).toEqual([4, 68]);
    const out = await write([q], [['general.architecture', gguf.str('test')]], { chunkSize: 34 });
    const g = await openGguf(new BytesSource(out));
    const t = g.tensors[0]!;
    expect(t.ggmlType.name).toBe('Q8_0');
    expect(t.logicalShape).toEqual([4, 64]);
    const blocks = await bytesOf(t);
    expect(Buffer.from(blocks).equals(Buffer.from(quantizeBlocks('Q8_0', x)))).toBe(true);
    const deq = new Float32Array((await bytesOf(g.dequantized(t), 100)).buffer);
    expect(Array.from(deq)).toEqual(Array.from(dequantizeBlocks('Q8_0', blocks)));
    const f16 = new Uint16Array((await bytesOf(g.dequantized(t, 'F16'), 6)).buffer);
    expect(f16.length).toBe(256);
  });

  it('quantizes F16 and BF16 sources as gguf-py does: through float32', async () => {
    const x = new Float32Array(2 * 64).map((_, i) => Math.fround(Math.sin(i * 0.7) * 0.3));
    const { f32ArrayToBf16, f32ArrayToF16, bf16ArrayToF32, f16ArrayToF32 } = await import('@tensorport/core');
    for (const [dtype, narrow, widen] of [['F16', f32ArrayToF16, f16ArrayToF32], ['BF16', f32ArrayToBf16, bf16ArrayToF32]] as const) {
      const h = new Uint16Array(x.length);
      narrow(new Uint32Array(x.buffer), h);
      const back = new Uint32Array(x.length);
      widen(h, back);
      const q = quantizeDescriptor(mem('w', dtype, [2, 64], new Uint8Array(h.buffer)), 'Q4_1');
      expect(Buffer.from(await bytesOf(q, 20)).equals(Buffer.from(quantizeBlocks('Q4_1', new Float32Array(back.buffer)))), dtype).toBe(true);
    }
    expect(() => quantizeDescriptor(mem('w', 'F32', [2, 48], new Uint8Array(384)), 'Q8_0')).toThrow(expect.objectContaining({ code: 'GgufBlockMismatch' }));
  });

  it('grows the header past its first buffer (a vocabulary of 20000 tokens)', async () => {
    const tokens = Array.from({ length: 20000 }, (_, i) => `▁tok${i}`);
    const scores = new Float32Array(20000).map((_, i) => -i);
    const out = await write([mem('t', 'F32', [3], new Uint8Array(12))], [['general.architecture', gguf.str('llama')], ['tokenizer.ggml.tokens', gguf.strings(tokens)], ['tokenizer.ggml.scores', gguf.array('FLOAT32', scores)], ['after', gguf.u64(7n)]]);
    const g = await openGguf(new BytesSource(out));
    const v = g.kv.get('tokenizer.ggml.tokens')!;
    expect(v.type === 'ARRAY' && v.value.values).toEqual(tokens);
    const sc = g.kv.get('tokenizer.ggml.scores')!;
    expect(sc.type === 'ARRAY' && Array.from(sc.value.values as Float32Array)).toEqual(Array.from(scores));
    expect(g.kv.get('after')).toEqual({ type: 'UINT64', value: 7n });
    expect(g.tensors[0]!.fileOffset).toBe(g.dataOffset);
  });

  it('streams in bounded chunks both ways (dequantizing and quantizing)', async () => {
    const x = new Float32Array(64 * 256).map((_, i) => Math.cos(i));
    const q = quantizeDescriptor(mem('w', 'F32', [64, 256], new Uint8Array(x.buffer)), 'Q4_0');
    const sizes: number[] = [];
    for await (const c of q.chunks(1000)) sizes.push(c.byteLength);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(1000);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(q.byteLength);
    const out = await write([q], []);
    const g = await openGguf(new BytesSource(out));
    const d: number[] = [];
    for await (const c of g.dequantized(g.tensors[0]!, 'BF16').chunks(1000)) d.push(c.byteLength);
    expect(Math.max(...d)).toBeLessThanOrEqual(1000);
    expect(d.reduce((a, b) => a + b, 0)).toBe(64 * 256 * 2);
  });
});

