import { open, readFile, type FileHandle } from 'node:fs/promises';
import { BytesSource, MemorySink, type ByteSource, type TensorDescriptor } from '@tensorport/core';
import type { PatchableSink } from '@tensorport/core';

export const FIX = new URL('../../../fixtures/npz/', import.meta.url);
export const fixturePath = (rel: string) => new URL(rel, FIX).pathname;
export const fixture = async (rel: string) => new Uint8Array(await readFile(new URL(rel, FIX)));
export const fixtureSource = async (rel: string) => new BytesSource(await fixture(rel), rel);

export async function bytesOf(t: TensorDescriptor, chunkSize?: number): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const c of t.chunks(chunkSize)) parts.push(c.slice());
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.byteLength;
  }
  return out;
}

/** A positional file reader for tests (sparse files past 4 GiB). */
export class TestFileSource implements ByteSource {
  bytesRead = 0;
  private constructor(
    private readonly fh: FileHandle,
    readonly size: number,
    readonly name: string,
  ) {}
  static async open(path: string): Promise<TestFileSource> {
    const fh = await open(path, 'r');
    return new TestFileSource(fh, (await fh.stat()).size, path);
  }
  async read(offset: number, length: number): Promise<Uint8Array> {
    const buf = new Uint8Array(length);
    let n = 0;
    while (n < length) {
      const { bytesRead } = await this.fh.read(buf, n, length - n, offset + n);
      if (bytesRead === 0) throw new Error('short read');
      n += bytesRead;
    }
    this.bytesRead += length;
    return buf;
  }
  close(): Promise<void> {
    return this.fh.close();
  }
}

/** MemorySink plus positional patching, as a file sink offers. */
export class PatchableMemorySink extends MemorySink implements PatchableSink {
  private patches: Array<[number, Uint8Array]> = [];
  async writeAt(offset: number, bytes: Uint8Array): Promise<void> {
    if (offset + bytes.byteLength > this.bytesWritten) throw new Error('writeAt past the end');
    this.patches.push([offset, bytes.slice()]);
  }
  override async commit(): Promise<void> {
    await super.commit();
    for (const [o, b] of this.patches) this.bytes().set(b, o);
  }
}

/** An in-memory tensor for writer tests. */
export function memTensor(name: string, dtype: TensorDescriptor['dtype'], shape: number[], data: Uint8Array, chunk = 7): TensorDescriptor {
  return {
    name, dtype, shape, byteLength: data.byteLength,
    async *chunks() {
      for (let i = 0; i < data.byteLength; i += chunk) yield data.subarray(i, Math.min(i + chunk, data.byteLength));
    },
  };
}
