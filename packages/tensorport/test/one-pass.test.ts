import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FolderContext, MemoryFolder, MemoryTarget, openZip, type ByteSource, type Context, type Folder } from '@tensorport/core';
import { nodeZlibCodec } from '@tensorport/core/node';
import { convert } from '../src/index.ts';

const REPO = join(import.meta.dirname, '../../..');
const TORCH = join(REPO, 'fixtures/torch/checkpoints/transformers.pt');

/**
 * A folder that counts what is done to its files: opens, every read with its range. A ZIP directory
 * parse reads the end record (the last 22 bytes); a pickle run reads data.pkl's bytes.
 */
class CountingFolder implements Folder {
  readonly opens = new Map<string, number>();
  readonly reads: Array<{ name: string; offset: number; length: number }> = [];
  constructor(private readonly inner: Folder) {}
  get name(): string {
    return this.inner.name;
  }
  list = () => this.inner.list();
  size = (name: string) => this.inner.size(name);
  path = (name: string) => this.inner.path(name);
  async open(name: string): Promise<ByteSource> {
    this.opens.set(name, (this.opens.get(name) ?? 0) + 1);
    const s = await this.inner.open(name);
    const reads = this.reads;
    return {
      name: s.name,
      size: s.size,
      get bytesRead() {
        return s.bytesRead;
      },
      read: (offset, length) => {
        reads.push({ name, offset, length });
        return s.read(offset, length);
      },
      close: () => s.close(),
    };
  }
  /** Reads of `name` that overlap [start, end). The end record is found by one read of the file's tail. */
  touching(name: string, start: number, end: number): number {
    return this.reads.filter((r) => r.name === name && r.offset < end && r.offset + r.length > start).length;
  }
}

/** Counts the reopened output's opens too. */
class CountingTarget extends MemoryTarget {
  folder: CountingFolder | null = null;
  override async reopen(): Promise<Context> {
    this.folder = new CountingFolder(new MemoryFolder(this.written, this.name));
    return new FolderContext(this.folder, this.name);
  }
}

describe('one pass over input and output (a torch convert)', () => {
  it('opens the input once and parses its ZIP directory once; the output is reopened once', async () => {
    const bytes = new Uint8Array(await readFile(TORCH));
    const folder = new CountingFolder(new MemoryFolder([['model.pt', bytes]]));
    // Where the end record and data.pkl are, from an independent parse.
    const zip = await openZip(await new MemoryFolder([['x', bytes]]).open('x'), { codec: nodeZlibCodec });
    const pkl = zip.entries.find((e) => e.name.endsWith('/data.pkl'))!;
    const input = new FolderContext(folder, 'model.pt', { codec: nodeZlibCodec });
    const target = new CountingTarget('out.safetensors');
    const r = await convert({ input, target, verify: true });
    await input.close();
    expect(r.from).toBe('torch-zip');
    expect(r.verified).toBe(true);

    expect(Object.fromEntries(folder.opens)).toEqual({ 'model.pt': 1 });
    expect(folder.touching('model.pt', bytes.byteLength - 22, bytes.byteLength)).toBe(1);
    // The scan runs data.pkl in scan mode and the reader in load mode: two runs, one read each
    // (one run needs the scan's value to be assembled; docs/architecture.md lists it as left).
    // The scan runs data.pkl in scan mode and the reader in load mode: two runs, each one read of
    // its bytes (one run needs the scan's value to be assembled; docs/architecture.md lists it as left).
    const pickleReads = folder.reads.filter((x) => x.length === pkl.compressedSize && x.offset > pkl.localHeaderOffset && x.offset < pkl.localHeaderOffset + 30 + 2 * pkl.name.length + 64);
    expect(pickleReads).toHaveLength(2);
    // Validation, the shape check and --verify share one open of the written file.
    expect(Object.fromEntries(target.folder!.opens)).toEqual({ 'out.safetensors': 1 });
  });
});
