import { execFileSync, spawn } from 'node:child_process';
import { link, mkdir, mkdtemp, open, readdir, readFile, rm, symlink, truncate, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileSink, FileSource, openCheckpointPath, pendingTempFiles, sameFile, writeCheckpointPath } from '../src/node/index.ts';
import { TensorportError, readChunks, SliceSource, writeSafetensors, type TensorDescriptor } from '../src/index.ts';
import { isLent, lend, pooledCount } from '../src/node/buffer-pool.ts';
import { collect, memTensor, patternBytes } from './helpers/mem-tensor.ts';
import { codeOf } from './helpers/error-code.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tensorport-fileio-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function fresh(name: string): Promise<string> {
  const d = join(dir, name);
  await mkdir(d, { recursive: true });
  return d;
}

describe('FileSource', () => {
  it('reads ranges exactly, with fresh plain Uint8Arrays', async () => {
    const d = await fresh('src');
    const data = patternBytes(100_000, 7);
    await writeFile(join(d, 'f'), data);
    const src = await FileSource.open(join(d, 'f'));
    expect(src.size).toBe(100_000);
    const a = await src.read(10, 5000);
    const b = await src.read(10, 5000);
    expect(Object.getPrototypeOf(a)).toBe(Uint8Array.prototype);
    expect(a.buffer).not.toBe(b.buffer);
    expect(a.byteOffset).toBe(0);
    expect(a.buffer.byteLength).toBe(5000);
    a.fill(0);
    expect(Buffer.from(b).equals(Buffer.from(data.subarray(10, 5010)))).toBe(true);
    expect((await src.read(100_000, 0)).byteLength).toBe(0);
    expect(Buffer.from(await src.read(0, 100_000)).equals(Buffer.from(data))).toBe(true);
    expect(src.bytesRead).toBe(110_000);
    expect(await codeOf(src.read(99_999, 2))).toBe('ReadOutOfBounds');
    expect(await codeOf(src.read(-1, 1))).toBe('ReadOutOfBounds');
    await src.close();
    await src.close();
    expect(await codeOf(src.read(0, 1))).toBe('IoError');
  });
  it('reads ahead of a sequential stream, but not past the end the stream gives (until)', async () => {
    const d = await fresh('source-until');
    const p = join(d, 'eight.bin');
    const data = patternBytes(8 << 20, 3);
    await writeFile(p, data);
    const K = 512 * 1024;
    // readChunks passes its range's end: nothing is read past 2 MiB, nothing dropped.
    const bounded = await FileSource.open(p);
    const got: Uint8Array[] = [];
    for await (const c of readChunks(bounded, K, 2 << 20, K)) got.push(c.slice());
    expect(Buffer.concat(got)).toEqual(Buffer.from(data.subarray(K, K + (2 << 20))));
    await bounded.close();
    expect(bounded.bytesDropped).toBe(0);
    // A read that gives no end is a one-off (a header, a pickle): nothing is read ahead of it,
    // so no read is made that nobody asked for and nothing is held after it.
    const oneOff = await FileSource.open(p);
    for (let at = K; at < K + (2 << 20); at += K) expect(await oneOff.read(at, K)).toEqual(data.subarray(at, at + K));
    expect(oneOff.preads).toBe(4);
    await oneOff.close();
    expect(oneOff.bytesDropped).toBe(0);
    // Through a window (a ZIP member) alike: the window's end bounds a stream, it does not start one.
    const windowed = await FileSource.open(p);
    const member = new SliceSource(windowed, K, 4 << 20);
    expect(await member.read(0, 2 * K)).toEqual(data.subarray(K, 3 * K));
    expect(windowed.preads).toBe(1);
    await windowed.close();
  });
  it('keeps read-ahead for several sequential readers at once (two members streamed side by side)', async () => {
    const d = await fresh('source-streams');
    const p = join(d, 'sixteen.bin');
    const data = patternBytes(16 << 20, 5);
    await writeFile(p, data);
    const K = 512 * 1024;
    const interleave = async (readers: number): Promise<FileSource> => {
      const src = await FileSource.open(p);
      const span = (16 << 20) / readers;
      const its = Array.from({ length: readers }, (_, r) => readChunks(src, r * span, span, K)[Symbol.asyncIterator]());
      const got: Buffer[][] = its.map(() => []);
      for (let done = 0; done < readers; ) {
        done = 0;
        for (const [r, it] of its.entries()) {
          const c = await it.next();
          if (c.done) done++;
          else got[r]!.push(Buffer.from(c.value));
        }
      }
      for (const [r, parts] of got.entries()) expect(Buffer.concat(parts).equals(Buffer.from(data.subarray(r * span, (r + 1) * span)))).toBe(true);
      await src.close();
      return src;
    };
    // every chunk read ahead was asked for: none read twice
    const two = await interleave(2);
    expect(two.bytesDropped).toBe(0);
    expect(two.bytesRead).toBe(16 << 20);
    // more readers than it follows: the least recently read one loses its chunks each round
    expect((await interleave(8)).bytesDropped).toBeGreaterThan(0);
  });
  it('a file that shrinks after open is a ShortRead, not a hang or garbage', async () => {
    const d = await fresh('shrink');
    await writeFile(join(d, 'f'), patternBytes(1000));
    const src = await FileSource.open(join(d, 'f'));
    await truncate(join(d, 'f'), 600);
    expect(await codeOf(src.read(500, 200))).toBe('ShortRead');
    await src.close();
  });
  it('small reads walking forward come from blocks: the same bytes, a few preads instead of one each', async () => {
    const d = await fresh('small-blocks');
    const p = join(d, 'tiny.bin');
    const data = patternBytes(1 << 20, 11);
    await writeFile(p, data);
    // A ZIP of tiny members, as read: a 30-byte header, a gap, 64 bytes of data, every 150 bytes.
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.integer({ min: 0, max: 4000 }), fc.integer({ min: 0, max: 70_000 })), { minLength: 1, maxLength: 300 }), fc.boolean(), async (steps, together) => {
        const src = await FileSource.open(p);
        try {
          const ranges: Array<[number, number]> = [];
          let at = 0;
          for (const [gap, len] of steps) {
            if (at + gap + len > data.length) break;
            ranges.push([at + gap, len]);
            at += gap + len;
          }
          // One after another, or all in flight at once (readInOrder's window): each gets its own bytes.
          const got = together ? await Promise.all(ranges.map(([o, l]) => src.read(o, l))) : [];
          if (!together) for (const [o, l] of ranges) got.push(await src.read(o, l));
          for (const [i, [o, l]] of ranges.entries()) {
            expect(got[i]!.byteOffset).toBe(0);
            expect(got[i]!.buffer.byteLength).toBe(l);
            expect(Buffer.from(got[i]!).equals(Buffer.from(data.subarray(o, o + l)))).toBe(true);
          }
          expect(src.bytesRead).toBe(ranges.reduce((n, [, l]) => n + l, 0));
        } finally {
          await src.close();
        }
      }),
      { numRuns: 60 },
    );
    const src = await FileSource.open(p);
    for (let o = 0; o + 94 <= data.length; o += 150) {
      expect(Buffer.from(await src.read(o, 30)).equals(Buffer.from(data.subarray(o, o + 30)))).toBe(true);
      expect(Buffer.from(await src.read(o + 30, 64)).equals(Buffer.from(data.subarray(o + 30, o + 94)))).toBe(true);
    }
    // 13,980 reads; a 256 KiB block each 1,748 of them.
    expect(src.preads).toBeLessThan(10);
    // A lone small read, or two (a length, then the header it gives), is read as asked.
    const lone = await FileSource.open(p);
    await lone.read(500_000, 8);
    await lone.read(500_008, 100);
    expect(lone.preads).toBe(2);
    await Promise.all([src.close(), lone.close()]);
  });
  it('a chunk read from just before a page boundary has the same bytes, in a read buffer of its own', async () => {
    const d = await fresh('placed-reads');
    const p = join(d, 'data.bin');
    const data = patternBytes(3 << 20, 17);
    await writeFile(p, data);
    const src = await FileSource.open(p);
    const size = 256 * 1024;
    for (const offset of [4064, 4065, 4072, 4088, 4095, 4096, 8192 - 8, 12_288 - 1, 1 << 20]) {
      const preads = src.preads;
      // As readChunks reads: a stream with its end given, so the chunks after it are read ahead too.
      const chunks = [await src.read(offset, size, offset + 3 * size), await src.read(offset + size, size, offset + 3 * size)];
      for (const [k, got] of chunks.entries()) {
        const at = offset + k * size;
        expect(Buffer.from(got).equals(Buffer.from(data.subarray(at, at + size))), `offset ${at}`).toBe(true);
        expect(got.byteOffset).toBe(0);
        expect(got.buffer.byteLength).toBe(size);
        expect(isLent(got)).toBe(true);
      }
      expect(src.preads - preads).toBeGreaterThanOrEqual(2);
    }
    await src.close();
  });

  it('a block dropped from a walk goes back to the buffer pool, and the next block reuses it', async () => {
    const d = await fresh('small-blocks-reuse');
    const p = join(d, 'tiny.bin');
    const data = patternBytes(4 << 20, 5);
    await writeFile(p, data);
    const block = 256 * 1024;
    // Buffers of this size left in the pool by earlier tests are taken out first (and kept out).
    const taken: Uint8Array[] = [];
    while (pooledCount(block) > 0) taken.push(lend(block));
    const before = pooledCount(block);
    const src = await FileSource.open(p);
    // All in flight at once, then one by one: reads of a block still pending when it is dropped get their bytes.
    const ranges: Array<[number, number]> = [];
    for (let o = 0; o + 94 <= data.length; o += 150) ranges.push([o, 30], [o + 30, 64]);
    const half = ranges.length >> 1;
    const first = await Promise.all(ranges.slice(0, half).map(([o, l]) => src.read(o, l)));
    const rest: Uint8Array[] = [];
    for (const [o, l] of ranges.slice(half)) rest.push(await src.read(o, l));
    for (const [i, got] of [...first, ...rest].entries()) {
      const [o, l] = ranges[i]!;
      expect(Buffer.from(got).equals(Buffer.from(data.subarray(o, o + l)))).toBe(true);
    }
    // Blocks dropped during the walk are back already; those kept at its end (the last is shorter) at close.
    const walked = pooledCount(block) - before;
    await src.close();
    expect(walked).toBeGreaterThanOrEqual(1);
    expect(pooledCount(block) - before).toBeGreaterThanOrEqual(walked + 3);
  });

  it('a block that cannot be read (the file shrank) leaves the small read its own ShortRead, or its bytes', async () => {
    const d = await fresh('small-blocks-shrink');
    const p = join(d, 'f');
    const data = patternBytes(600_000, 5);
    await writeFile(p, data);
    const src = await FileSource.open(p);
    for (let o = 0; o < 300; o += 100) await src.read(o, 50);
    await truncate(p, 350_000);
    // The block would reach past the new end; the read itself does not.
    expect(Buffer.from(await src.read(300_000, 50)).equals(Buffer.from(data.subarray(300_000, 300_050)))).toBe(true);
    expect(await codeOf(src.read(400_000, 50))).toBe('ShortRead');
    await src.close();
  });
  it('refuses missing files, directories and FIFOs with IoError', async () => {
    const d = await fresh('odd');
    expect(await codeOf(FileSource.open(join(d, 'missing')))).toBe('IoError');
    expect(await codeOf(FileSource.open(d))).toBe('IoError');
    // Without a writer, a blocking open of a FIFO would never return.
    execFileSync('mkfifo', [join(d, 'fifo')]);
    expect(await codeOf(FileSource.open(join(d, 'fifo')))).toBe('IoError');
  });
  it('reads a sparse file beyond 4 GiB at offsets past 2^32', async () => {
    const d = await fresh('sparse');
    const path = join(d, 'big');
    const size = 2 ** 32 + 2 ** 30 + 123; // 5 GiB + 123
    const fh = await open(path, 'w');
    const marks: Array<[number, Uint8Array]> = [
      [2 ** 32 - 3, patternBytes(10, 1)], // straddles 2^32
      [2 ** 32 + 12345, patternBytes(4096, 2)],
      [size - 77, patternBytes(77, 3)],
    ];
    for (const [at, bytes] of marks) await fh.write(bytes, 0, bytes.byteLength, at);
    await fh.truncate(size);
    await fh.close();
    const src = await FileSource.open(path);
    expect(src.size).toBe(size);
    for (const [at, bytes] of marks) {
      expect(Buffer.from(await src.read(at, bytes.byteLength)).equals(Buffer.from(bytes))).toBe(true);
    }
    const hole = await src.read(2 ** 32 + 2 ** 20, 64);
    expect(hole.every((x) => x === 0)).toBe(true);
    expect(await codeOf(src.read(size - 76, 77))).toBe('ReadOutOfBounds');
    // One read larger than a Buffer can hold is refused up front, not a RangeError from Node.
    expect(await codeOf(src.read(0, 2 ** 32 + 1))).toBe('IoError');
    await src.close();
    await rm(path);
  });
});

describe('FileSink', () => {
  const listing = async (d: string) => (await readdir(d)).sort();

  it('writes through a temp file beside the target and renames it on commit', async () => {
    const d = await fresh('sink-ok');
    const target = join(d, 'out.bin');
    const sink = await FileSink.create(target, { bufferSize: 7 });
    expect(sink.tempPath.startsWith(join(d, '.out.bin.tensorport-'))).toBe(true);
    expect(sink.tempPath.endsWith('.tmp')).toBe(true);
    expect(pendingTempFiles()).toContain(sink.tempPath);
    const data = patternBytes(10_000, 5);
    const reused = new Uint8Array(333);
    for (let pos = 0; pos < data.byteLength; ) {
      const n = Math.min(data.byteLength - pos, [1, 6, 7, 8, 333, 50][pos % 6]!);
      // The sink must copy: the caller overwrites its buffer right after each write.
      reused.set(data.subarray(pos, pos + n));
      await sink.write(reused.subarray(0, n));
      reused.fill(0xee);
      pos += n;
    }
    expect(await listing(d)).toEqual([sink.tempPath.slice(d.length + 1)]);
    await sink.commit();
    expect(await listing(d)).toEqual(['out.bin']);
    expect(Buffer.from(await readFile(target)).equals(Buffer.from(data))).toBe(true);
    expect(sink.bytesWritten).toBe(10_000);
    expect(pendingTempFiles()).not.toContain(sink.tempPath);
    expect(await codeOf(sink.write(new Uint8Array(1)))).toBe('IoError');
    await sink.abort(); // no-op after commit
    expect(await listing(d)).toEqual(['out.bin']);
  });
  it('patches bytes already written, in the file and in the write-behind buffer alike', async () => {
    const d = await fresh('sink-patch');
    const target = join(d, 'p.bin');
    const sink = await FileSink.create(target, { bufferSize: 16, fsync: false });
    const expected = patternBytes(100, 3);
    await sink.write(expected);
    // 96 bytes have gone to the file, the last 4 are still buffered: patch on both sides and across.
    const patches: Array<[number, number]> = [[0, 4], [10, 30], [95, 5], [40, 50]];
    for (const [at, n] of patches) {
      const bytes = patternBytes(n, at + 11);
      await sink.writeAt(at, bytes);
      expected.set(bytes, at);
    }
    expect(await codeOf(sink.writeAt(98, new Uint8Array(4)))).toBe('IoError');
    await sink.commit();
    expect(Buffer.from(await readFile(target)).equals(Buffer.from(expected))).toBe(true);
  });
  it('any mix of copied writes, handed-over read buffers and patches lands where it was written (buffers placed by file position)', async () => {
    const d = await fresh('sink-mix');
    const srcPath = join(d, 'src.bin');
    const source = patternBytes(1 << 20, 21);
    await writeFile(srcPath, source);
    const op = fc.oneof(
      fc.record({ kind: fc.constant('write' as const), n: fc.integer({ min: 1, max: 9000 }) }),
      fc.record({ kind: fc.constant('owned' as const), at: fc.integer({ min: 0, max: 1000 }) }),
      fc.record({ kind: fc.constant('patch' as const), back: fc.integer({ min: 1, max: 20000 }), n: fc.integer({ min: 1, max: 300 }) }),
    );
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 12 }), fc.constantFrom(16, 4096, 10_000), async (ops, bufferSize) => {
        const target = join(d, `mix-${run++}.bin`);
        const sink = await FileSink.create(target, { bufferSize, fsync: false });
        const src = await FileSource.open(srcPath);
        const parts: Uint8Array[] = [];
        let length = 0;
        const expected = () => Buffer.concat(parts.map((p) => Buffer.from(p)));
        try {
          for (const [i, o] of ops.entries()) {
            if (o.kind === 'write') {
              const bytes = patternBytes(o.n, i + 1);
              await sink.write(bytes);
              parts.push(bytes.slice());
              length += o.n;
            } else if (o.kind === 'owned') {
              // A pooled read buffer (256 KiB), written from where it is.
              const chunk = await src.read(o.at, 256 * 1024);
              parts.push(chunk.slice());
              length += chunk.byteLength;
              await sink.writeOwned(chunk);
            } else if (length > 0) {
              const at = Math.max(0, length - o.back);
              const n = Math.min(o.n, length - at);
              const bytes = patternBytes(n, i + 7);
              await sink.writeAt(at, bytes);
              const flat = expected();
              flat.set(bytes, at);
              parts.length = 0;
              parts.push(new Uint8Array(flat));
            }
          }
          await sink.commit();
        } finally {
          await src.close();
        }
        expect(Buffer.from(await readFile(target)).equals(expected())).toBe(true);
        await rm(target);
      }),
      { numRuns: 40 },
    );
  });
  it('a read buffer handed over a few bytes into a page is copied (and given back at once); further in, written where it is', async () => {
    const d = await fresh('sink-misplaced');
    const srcPath = join(d, 'src.bin');
    const source = patternBytes(1 << 20, 13);
    await writeFile(srcPath, source);
    const src = await FileSource.open(srcPath);
    const size = 256 * 1024;
    for (const lead of [8, 31, 32, 40]) {
      const target = join(d, `lead-${lead}.bin`);
      const sink = await FileSink.create(target, { fsync: false });
      const head = patternBytes(lead, lead);
      await sink.write(head);
      const chunk = await src.read(lead, size);
      const before = pooledCount(size);
      await sink.writeOwned(chunk);
      // Copied: back in the pool when writeOwned returns. Written from where it is: only once the write ends.
      expect(pooledCount(size) - before, `lead ${lead}`).toBe(lead < 32 ? 1 : 0);
      await sink.commit();
      expect(pooledCount(size) - before).toBe(1);
      expect(Buffer.from(await readFile(target)).equals(Buffer.concat([Buffer.from(head), Buffer.from(source.subarray(lead, lead + size))]))).toBe(true);
    }
    await src.close();
  });
  it('with fsync, starts datasyncs while writing (every writebackBytes), bytes unchanged; none without fsync', async () => {
    const d = await fresh('sink-writeback');
    const data = patternBytes(1 << 20, 9);
    for (const fsync of [true, false]) {
      const target = join(d, `wb-${fsync}.bin`);
      const sink = await FileSink.create(target, { bufferSize: 4096, writebackBytes: 64 * 1024, fsync });
      for (let pos = 0; pos < data.byteLength; pos += 10_000) await sink.write(data.subarray(pos, pos + 10_000));
      await sink.commit();
      expect(Buffer.from(await readFile(target)).equals(Buffer.from(data))).toBe(true);
      // One in flight at a time, so fewer than bytes / writebackBytes, but several over 1 MiB.
      if (fsync) expect(sink.writebacks).toBeGreaterThanOrEqual(2);
      else expect(sink.writebacks).toBe(0);
      expect(sink.writebacks).toBeLessThanOrEqual(16);
    }
    // An abort while a datasync may be running still leaves nothing behind.
    const sink = await FileSink.create(join(d, 'aborted.bin'), { bufferSize: 4096, writebackBytes: 4096 });
    for (let pos = 0; pos < 200_000; pos += 5_000) await sink.write(data.subarray(pos, pos + 5_000));
    expect(sink.writebacks).toBeGreaterThan(0);
    await sink.abort();
    expect(await listing(d)).toEqual(['wb-false.bin', 'wb-true.bin']);
  });
  it('refuses an existing target without force, replaces it with force', async () => {
    const d = await fresh('sink-exists');
    const target = join(d, 'x');
    await writeFile(target, 'old');
    expect(await codeOf(FileSink.create(target))).toBe('OutputExists');
    expect(await codeOf(FileSink.create(d, { force: true }))).toBe('OutputExists');
    const sink = await FileSink.create(target, { force: true });
    await sink.write(new TextEncoder().encode('new'));
    expect(await readFile(target, 'utf8')).toBe('old');
    await sink.commit();
    expect(await readFile(target, 'utf8')).toBe('new');
    expect(await listing(d)).toEqual(['x']);
  });
  it('does not clobber a target created while writing (no force)', async () => {
    const d = await fresh('sink-race');
    const target = join(d, 'x');
    const sink = await FileSink.create(target);
    await sink.write(new Uint8Array(10));
    await writeFile(target, 'someone else');
    expect(await codeOf(sink.commit())).toBe('OutputExists');
    expect(await readFile(target, 'utf8')).toBe('someone else');
    expect(await listing(d)).toEqual(['x']);
  });
  it('abort removes the temp file; a failing writeSafetensors leaves nothing at the target', async () => {
    const d = await fresh('sink-abort');
    const sink = await FileSink.create(join(d, 'a'));
    await sink.write(new Uint8Array(100));
    await sink.abort();
    await sink.abort();
    expect(await listing(d)).toEqual([]);
    const broken: TensorDescriptor = {
      ...memTensor('w', 'U8', [1 << 20]),
      async *chunks() {
        yield new Uint8Array(1 << 19);
        throw new Error('source died mid-stream');
      },
    };
    const sink2 = await FileSink.create(join(d, 'model.safetensors'), { bufferSize: 4096 });
    await expect(writeSafetensors([memTensor('a', 'F32', [1000]), broken], null, sink2)).rejects.toThrow('source died');
    expect(await listing(d)).toEqual([]);
    expect(pendingTempFiles()).toEqual([]);
  });
});

// ---- interrupted processes: a child writes slowly until killed ----

const here = fileURLToPath(new URL('.', import.meta.url));
let childScript: string;

beforeAll(async () => {
  // The child runs TypeScript sources: bundle them with the esbuild that tsup ships.
  const require = createRequire(import.meta.url);
  const esbuild = createRequire(require.resolve('tsup'))('esbuild') as { build(options: Record<string, unknown>): Promise<unknown> };
  const entry = join(dir, 'child-entry.ts');
  await writeFile(
    entry,
    `import { FileSink } from ${JSON.stringify(resolve(here, '../src/node/file-sink.ts'))};
import { writeSafetensors } from ${JSON.stringify(resolve(here, '../src/safetensors/writer.ts'))};
const [target, mode] = process.argv.slice(2);
if (mode === 'own-handler') process.on('SIGTERM', () => { process.stdout.write('handled\\n'); setTimeout(() => process.exit(7), 20); });
const sink = await FileSink.create(target!, { bufferSize: 4096 });
let told = false;
const endless = {
  name: 'w', dtype: 'U8' as const, shape: [1e9], byteLength: 1e9,
  async *chunks() {
    for (;;) {
      yield new Uint8Array(65536).fill(1);
      await new Promise((r) => setTimeout(r, 2));
    }
  },
};
await writeSafetensors([endless], null, sink, {
  onProgress(done) {
    if (!told && done > 300_000) {
      told = true;
      process.stdout.write(JSON.stringify({ temp: sink.tempPath }) + '\\n');
      if (mode === 'exit') setTimeout(() => process.exit(3), 300);
      if (mode === 'throw') setTimeout(() => { throw new Error("boom"); }, 300);
    }
  },
});
`,
  );
  childScript = join(dir, 'child.mjs');
  await esbuild.build({ entryPoints: [entry], bundle: true, platform: 'node', format: 'esm', target: 'node20', outfile: childScript, logLevel: 'error' });
});

function runChild(target: string, mode: string, signal: NodeJS.Signals | null): Promise<{ code: number | null; signal: NodeJS.Signals | null; temp: string; sawTemp: boolean; out: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [childScript, target, mode], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let temp = '';
    let sawTemp = false;
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.stdout.on('data', async (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line && !temp) {
        temp = (JSON.parse(line) as { temp: string }).temp;
        try {
          await readFile(temp).then((b) => (sawTemp = b.byteLength > 0));
        } catch {
          sawTemp = false;
        }
        if (signal) child.kill(signal);
      }
    });
    child.on('error', reject);
    child.on('close', (code, sig) => {
      clearTimeout(timer);
      resolvePromise({ code, signal: sig, temp, sawTemp, out });
    });
  });
}

describe('interrupted runs leave neither a target nor a temp file', () => {
  it.each([
    ['SIGINT', 'plain', 'SIGINT'],
    ['SIGTERM', 'plain', 'SIGTERM'],
    ['SIGHUP', 'plain', 'SIGHUP'],
  ] as const)('%s: the process still dies of the signal', async (_, mode, signal) => {
    const d = await fresh(`kill-${signal}`);
    const r = await runChild(join(d, 'model.safetensors'), mode, signal);
    expect(r.sawTemp).toBe(true);
    expect(r.signal).toBe(signal);
    expect(await readdir(d)).toEqual([]);
  });
  it('an application SIGTERM handler keeps control (exit code 7), temp file still removed', async () => {
    const d = await fresh('kill-handler');
    const r = await runChild(join(d, 'model.safetensors'), 'own-handler', 'SIGTERM');
    expect(r.sawTemp).toBe(true);
    expect([r.code, r.signal]).toEqual([7, null]);
    expect(r.out).toContain('handled');
    expect(await readdir(d)).toEqual([]);
  });
  it.each([
    ['process.exit', 'exit', 3],
    ['an uncaught exception', 'throw', 1],
  ])('%s', async (_, mode, code) => {
    const d = await fresh(`exit-${mode}`);
    const r = await runChild(join(d, 'model.safetensors'), mode, null);
    expect(r.sawTemp).toBe(true);
    expect(r.code).toBe(code);
    expect(await readdir(d)).toEqual([]);
  });
});

describe('sameFile', () => {
  it('compares device and inode: other spellings, symlinks and hard links are the same file', async () => {
    const d = await fresh('same');
    const a = join(d, 'a');
    await writeFile(a, 'x');
    await writeFile(join(d, 'b'), 'x');
    await symlink(a, join(d, 'sym'));
    await link(a, join(d, 'hard'));
    await mkdir(join(d, 'sub'));
    expect(await sameFile(a, join(d, 'sub', '..', 'a'))).toBe(true);
    expect(await sameFile(a, join(d, 'sym'))).toBe(true);
    expect(await sameFile(join(d, 'hard'), join(d, 'sym'))).toBe(true);
    expect(await sameFile(a, join(d, 'b'))).toBe(false);
    expect(await sameFile(a, join(d, 'missing'))).toBe(false);
  });
});

describe('checkpoint paths', () => {
  const tensors = [memTensor('b', 'F32', [100]), memTensor('a', 'I64', [50]), memTensor('c', 'U8', [30])];

  async function expectSame(path: string): Promise<void> {
    const ckpt = await openCheckpointPath(path);
    try {
      expect(ckpt.metadata).toEqual(new Map([['format', 'pt']]));
      expect(ckpt.tensors.map((t) => t.name).sort()).toEqual(['a', 'b', 'c']);
      for (const t of tensors) {
        const got = ckpt.tensors.find((x) => x.name === t.name)!;
        expect(Buffer.from(await collect(got)).equals(Buffer.from(await collect(t)))).toBe(true);
      }
    } finally {
      await ckpt.close();
    }
  }

  it('file output: one file at exactly that path, never sharded', async () => {
    const d = await fresh('paths-file');
    const out = join(d, 'weights.safetensors');
    const r = await writeCheckpointPath(tensors, { format: 'pt' }, out, { maxShardSize: 10 });
    expect(r.paths).toEqual([out]);
    expect(await readdir(d)).toEqual(['weights.safetensors']);
    await expectSame(out);
    expect(await codeOf(writeCheckpointPath(tensors, null, out))).toBe('OutputExists');
    expect(await codeOf(writeCheckpointPath(tensors, null, out, { force: true, inputs: [join(d, '.', 'weights.safetensors')] }))).toBe('SameInputOutput');
  });
  it('directory output: model.safetensors, or shards + index; opens back by directory or index path', async () => {
    const d = await fresh('paths-dir');
    const single = await writeCheckpointPath(tensors, { format: 'pt' }, join(d, 'one') + '/');
    expect(single.files).toEqual(['model.safetensors']);
    await expectSame(join(d, 'one'));
    const sharded = await writeCheckpointPath(tensors, { format: 'pt' }, join(d, 'many') + '/', { maxShardSize: 450 });
    expect(sharded.files).toEqual(['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors', 'model.safetensors.index.json']);
    expect((await readdir(join(d, 'many'))).sort()).toEqual(sharded.files);
    await expectSame(join(d, 'many'));
    await expectSame(join(d, 'many', 'model.safetensors.index.json'));
    // Existing directory without a trailing slash is a directory output too; existing files refused.
    expect(await codeOf(writeCheckpointPath(tensors, null, join(d, 'many'), { maxShardSize: 450 }))).toBe('OutputExists');
    // Reading a directory and writing into it with force would replace what is being read.
    expect(await codeOf(writeCheckpointPath(tensors, null, join(d, 'many'), { force: true, maxShardSize: 450, inputs: [join(d, 'many')] }))).toBe('SameInputOutput');
    // Forced single-file rewrite of a sharded directory removes the stale index so it opens as written.
    await writeCheckpointPath(tensors, { format: 'pt' }, join(d, 'many'), { force: true });
    expect((await readdir(join(d, 'many'))).sort()).toEqual(['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors', 'model.safetensors']);
    await expectSame(join(d, 'many'));
  });
  it('errors: no checkpoint in a directory, a missing shard, a missing path', async () => {
    const d = await fresh('paths-err');
    expect(await codeOf(openCheckpointPath(d))).toBe('UnknownFormat');
    expect(await codeOf(openCheckpointPath(join(d, 'nope')))).toBe('IoError');
    await writeCheckpointPath(tensors, null, join(d, 'ck') + '/', { maxShardSize: 450 });
    await rm(join(d, 'ck', 'model-00002-of-00002.safetensors'));
    const err = (await openCheckpointPath(join(d, 'ck')).catch((e: unknown) => e)) as TensorportError;
    expect(err.code).toBe('ShardMissing');
    expect(err.path).toBe(join(d, 'ck', 'model-00002-of-00002.safetensors'));
  });
});
