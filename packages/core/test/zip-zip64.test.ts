import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ZipWriter, openZip, type ByteSink, type PatchableSink, type ZipArchive } from '../src/index.ts';
import { FileSource } from '../src/node/file-source.ts';
import { nodeZlibCodec } from '../src/node/zlib.ts';

const FIX = new URL('../../../fixtures/npz/big/', import.meta.url);
/** np.savez of a 4 GiB + 1 KiB u1 array then a small one: sizes from big_files.sha256's file. */
const BIG_SIZE = 4294968958;

let dir = '';
let path = '';
let head: Uint8Array;
let tail: Uint8Array;

beforeAll(async () => {
  head = new Uint8Array(await readFile(new URL('big_zip64.head4096.bin', FIX)));
  tail = new Uint8Array(await readFile(new URL('big_zip64.tail4096.bin', FIX)));
  dir = await mkdtemp(join(tmpdir(), 'tp-zip64-'));
  path = join(dir, 'big_zip64.npz');
  // Sparse: only the kept head and tail are written; the 4 GiB between reads back as zeros.
  const fh = await open(path, 'w');
  await fh.truncate(BIG_SIZE);
  await fh.write(head, 0, head.byteLength, 0);
  await fh.write(tail, 0, tail.byteLength, BIG_SIZE - tail.byteLength);
  await fh.close();
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Reading 4 GiB takes seconds, or far longer on a loaded CI machine: generous timeouts, no timing asserts. */
const BIG = { timeout: 600_000 };

async function drain(z: ZipArchive, name: string): Promise<number> {
  let n = 0;
  for await (const c of z.stream(z.get(name)!, { chunkSize: 32 * 1024 * 1024 })) n += c.byteLength;
  return n;
}

describe('ZIP64 archive past 4 GiB (numpy savez layout)', () => {
  it('reads the ZIP64 end record and per-field CD extras ([usize, csize] for one entry, [offset] for the other)', async () => {
    const z = await openZip(await FileSource.open(path), { codec: nodeZlibCodec });
    expect(z.end.zip64).toBe(true);
    expect(z.entries.map((e) => [e.name, e.uncompressedSize, e.localHeaderOffset])).toEqual([
      ['big.npy', 4294968448, 0],
      ['small_after.npy', 144, 4294968505],
    ]);
    expect(z.get('big.npy')!.dataOffset).toBe(57);
    expect(await drain(z, 'small_after.npy')).toBe(144);
    await z.close();
  });

  it('streams and CRC-checks the 4 GiB member', async () => {
    const z = await openZip(await FileSource.open(path), { codec: nodeZlibCodec });
    expect(await drain(z, 'big.npy')).toBe(4294968448);
    await z.close();
  }, BIG.timeout);

  it('writes the same archive byte for byte (head and tail compared with numpy output)', async () => {
    const src = await openZip(await FileSource.open(path), { codec: nodeZlibCodec });
    const bigHeader = await src.readPrefix(src.get('big.npy')!, 128);
    const small = await src.readPrefix(src.get('small_after.npy')!, 144);
    await src.close();

    const sink = new WindowSink();
    const zip = new ZipWriter(sink, { codec: nodeZlibCodec });
    const zeros = new Uint8Array(8 * 1024 * 1024);
    async function* bigData(): AsyncGenerator<Uint8Array> {
      yield bigHeader;
      let left = 4294968448 - 128;
      while (left > 0) {
        const n = Math.min(left, zeros.byteLength);
        yield zeros.subarray(0, n);
        left -= n;
      }
    }
    await zip.add('big.npy', bigData());
    await zip.add('small_after.npy', (async function* () { yield small; })());
    await zip.finish();
    expect(sink.bytesWritten).toBe(BIG_SIZE);
    expect(sink.head).toEqual(head);
    expect(sink.tailBytes(4096)).toEqual(tail);
  }, BIG.timeout);
});

describe('ZIP64 PyTorch checkpoint past 4 GiB (miniz layout)', () => {
  // torch.save of a 4 GiB + 1 KiB tensor: every entry stored with flag 0x0808 and zero local sizes,
  // 'FB' padding extras, a local ZIP64 extra holding [usize, 0] or only the offset, and 24-byte
  // descriptors past 4 GiB even for members of a few bytes.
  const TORCH_SIZE = 4294970341;
  let torchPath = '';
  beforeAll(async () => {
    const h = new Uint8Array(await readFile(new URL('big_torch_zip64.head4096.bin', FIX)));
    const t = new Uint8Array(await readFile(new URL('big_torch_zip64.tail8192.bin', FIX)));
    torchPath = join(dir, 'big_torch_zip64.pt');
    const fh = await open(torchPath, 'w');
    await fh.truncate(TORCH_SIZE);
    await fh.write(h, 0, h.byteLength, 0);
    await fh.write(t, 0, t.byteLength, TORCH_SIZE - t.byteLength);
    await fh.close();
  });

  it('opens it, checks every descriptor, and CRC-checks every member after the big one', async () => {
    const z = await openZip(await FileSource.open(torchPath));
    expect(z.end.zip64).toBe(true);
    expect(z.entries.length).toBe(8);
    const big = z.get('big_torch_zip64/data/0')!;
    expect([big.uncompressedSize, big.dataOffset % 64]).toEqual([4294968320, 0]);
    for (const e of z.entries) {
      expect(e.flags).toBe(0x0808);
      if (e !== big) expect(await drain(z, e.name), e.name).toBe(e.uncompressedSize);
    }
    expect(z.entries.filter((e) => e.localHeaderOffset > 2 ** 32).length).toBeGreaterThan(0);
    await z.close();
  });
});

/** Keeps the first 4 KiB and the last 64 KiB written (enough to patch recent local headers). */
class WindowSink implements PatchableSink {
  readonly name = '<window>';
  bytesWritten = 0;
  readonly head = new Uint8Array(4096);
  private recent: Array<{ at: number; bytes: Uint8Array }> = [];
  async write(chunk: Uint8Array): Promise<void> {
    this.put(this.bytesWritten, chunk);
    this.recent.push({ at: this.bytesWritten, bytes: chunk.slice(0, Math.min(chunk.byteLength, 65536 * 2)) });
    if (chunk.byteLength > 65536 * 2) this.recent[this.recent.length - 1] = { at: this.bytesWritten + chunk.byteLength - 65536, bytes: chunk.slice(chunk.byteLength - 65536) };
    this.bytesWritten += chunk.byteLength;
    while (this.recent.length > 1 && this.recent[1]!.at < this.bytesWritten - 65536) this.recent.shift();
  }
  async writeAt(offset: number, bytes: Uint8Array): Promise<void> {
    this.put(offset, bytes);
    for (const r of this.recent) {
      for (let i = 0; i < bytes.byteLength; i++) {
        const p = offset + i - r.at;
        if (p >= 0 && p < r.bytes.byteLength) r.bytes[p] = bytes[i]!;
      }
    }
  }
  private put(offset: number, bytes: Uint8Array): void {
    for (let i = 0; i < bytes.byteLength && offset + i < this.head.byteLength; i++) this.head[offset + i] = bytes[i]!;
  }
  tailBytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    const start = this.bytesWritten - n;
    for (const r of this.recent) {
      for (let i = 0; i < r.bytes.byteLength; i++) {
        const p = r.at + i - start;
        if (p >= 0 && p < n) out[p] = r.bytes[i]!;
      }
    }
    return out;
  }
  async commit(): Promise<void> {}
  async abort(): Promise<void> {}
}

export type { ByteSink };
