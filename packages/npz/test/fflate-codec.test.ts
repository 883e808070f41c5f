import { deflateRawSync } from 'node:zlib';
import { afterEach, describe, expect, it, vi } from 'vitest';

async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}

async function collect(chunks: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const c of chunks) parts.push(c);
  return Buffer.concat(parts);
}

// Importing the package must not load fflate (issue 18: it was 15 ms of every CLI start-up in Node,
// where nodeZlibCodec is passed instead); the first inflate or deflate loads it.
describe('fflateCodec loads fflate on first use', () => {
  afterEach(() => {
    vi.doUnmock('fflate');
    vi.resetModules();
  });

  it('not when the package is imported; once, when it first inflates or deflates', async () => {
    vi.resetModules();
    let loads = 0;
    vi.doMock('fflate', async (importOriginal) => {
      loads++;
      return importOriginal();
    });
    const { fflateCodec } = await import('../src/index.ts');
    const iterator = fflateCodec.inflateRaw(once(new Uint8Array(deflateRawSync(Buffer.from('abc')))));
    expect(loads).toBe(0);

    expect((await collect(iterator)).toString()).toBe('abc');
    expect(loads).toBe(1);
    const data = Buffer.alloc(100_000, 'tensor');
    const packed = await collect(fflateCodec.deflateRaw(once(data), 9));
    expect(packed.length).toBeLessThan(1000);
    expect(await collect(fflateCodec.inflateRaw(once(packed)))).toEqual(data);
    expect(loads).toBe(1);
  });
});
