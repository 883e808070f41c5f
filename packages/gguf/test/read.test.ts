import { describe, expect, it } from 'vitest';
import { openGguf, summarizeGguf } from '../src/index.ts';
import { asManifestValue, bytesOf, fixtureSource, manifest, sha256 } from './helpers.ts';

describe.each(['tiny.gguf', 'kitchen.gguf'])('%s (written by gguf-py GGUFWriter)', (file) => {
  it('reads every key with its type and value, in file order', async () => {
    const m = await manifest(file);
    const g = await openGguf(await fixtureSource(file));
    expect([...g.kv.keys()]).toEqual(m.kv.map((k) => k.key));
    for (const want of m.kv) {
      const got = g.kv.get(want.key)!;
      expect(got.type, want.key).toBe(want.type);
      if (got.type === 'ARRAY' && want.elementType) expect(got.value.elementType, want.key).toBe(want.elementType);
      expect(asManifestValue(got), want.key).toEqual(want.value);
    }
  });

  it('gives every tensor with its type, shape, offset and bytes, reading only the header', async () => {
    const m = await manifest(file);
    const src = await fixtureSource(file);
    const g = await openGguf(src);
    expect(src.bytesRead).toBeLessThanOrEqual(src.size);
    expect(src.bytesRead).toBeGreaterThan(0);
    expect(g.tensors.map((t) => t.name)).toEqual(m.tensors.map((t) => t.name));
    for (const [i, want] of m.tensors.entries()) {
      const t = g.tensors[i]!;
      expect(t.ggmlType.name).toBe(want.type);
      expect(t.dims).toEqual(want.dims);
      expect(t.logicalShape).toEqual([...want.dims].reverse());
      expect(t.fileOffset).toBe(want.dataOffset);
      expect(t.byteLength).toBe(want.nBytes);
      expect(sha256(await bytesOf(t, 7))).toBe(want.sha256);
    }
    expect(g.warnings).toEqual([]);
  });
});

describe('tiny.gguf (test vector F1)', () => {
  it('has data offset 320, tensors at 0/24 and 32/34, and stops reading at the header', async () => {
    const g = await openGguf(await fixtureSource('tiny.gguf'));
    expect(g.version).toBe(3);
    expect(g.alignment).toBe(32);
    expect(g.dataOffset).toBe(320);
    expect(g.tensors.map((t) => [t.fileOffset - g.dataOffset, t.byteLength])).toEqual([[0, 24], [32, 34]]);
    const [f32, q8] = g.tensors;
    expect(f32!.dtype).toBe('F32');
    expect(f32!.shape).toEqual([2, 3]);
    // Block types are raw bytes with the last axis in bytes, as gguf-py exposes them.
    expect(q8!.dtype).toBe('U8');
    expect(q8!.shape).toEqual([1, 34]);
    expect(q8!.logicalShape).toEqual([1, 32]);
    expect(g.metadata.get('test.str')).toBe('hé');
    expect(g.metadata.get('test.arr')).toBe('[1,2,3]');
    expect(g.metadata.get('test.f32')).toBe('0.5');
  });

  it('fetches header pages only: a large file is not read past its header', async () => {
    const { BytesSource } = await import('@tensorport/core');
    const base = (await fixtureSource('tiny.gguf')) as unknown as { read(o: number, n: number): Promise<Uint8Array>; size: number };
    const all = await base.read(0, base.size);
    // The same header in front of 8 MiB of tensor bytes: declare t.f32 as [2, 3] F32 still, so only
    // its padding grows; the reader must not touch the tail.
    const big = new Uint8Array(all.byteLength + 8 * 1024 * 1024);
    big.set(all);
    const src = new BytesSource(big, 'big.gguf');
    await openGguf(src);
    expect(src.bytesRead).toBeLessThan(300 * 1024);
  });
});

describe('kitchen.gguf', () => {
  it('keeps nested arrays nested, 64-bit values as BigInt and general.alignment', async () => {
    const g = await openGguf(await fixtureSource('kitchen.gguf'));
    expect(g.alignment).toBe(64);
    const nested = g.kv.get('k.nested')!;
    expect(nested.type).toBe('ARRAY');
    if (nested.type !== 'ARRAY') return;
    expect(nested.value.elementType).toBe('ARRAY');
    expect((nested.value.values as { values: Int32Array }[]).map((a) => Array.from(a.values))).toEqual([[1, 2], [3]]);
    expect(g.kv.get('k.u64')).toEqual({ type: 'UINT64', value: 2n ** 64n - 1n });
    expect(g.metadata.get('k.nested')).toBe('[[1,2],[3]]');
    expect(g.metadata.get('k.f32')).toBe('0.1');
    const i32 = g.tensors.find((t) => t.name === 'f.i32')!;
    expect(i32.dims).toEqual([4, 3, 2, 1]);
    expect(i32.shape).toEqual([1, 2, 3, 4]);
    expect(i32.dtype).toBe('I32');
  });
});

describe('summarizeGguf', () => {
  it('counts parameters and bits per weight per type', async () => {
    const s = summarizeGguf(await openGguf(await fixtureSource('tiny.gguf')));
    expect(s).toMatchObject({ architecture: 'test', tensors: 2, parameters: 38, bytes: 58, tokenizer: null });
    expect(s.types).toEqual({ F32: { tensors: 1, parameters: 6, bitsPerWeight: 32 }, Q8_0: { tensors: 1, parameters: 32, bitsPerWeight: 8.5 } });
    expect(s.bitsPerWeight).toBeCloseTo((58 * 8) / 38);
  });
});
