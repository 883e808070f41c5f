import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { FolderContext, MemoryFolder, MemoryTarget, openZip, type ByteSource, type Context, type Folder } from '@tensorport/core';
import { nodeZlibCodec } from '@tensorport/core/node';
import { convert, validate } from '../src/index.ts';

const REPO = join(import.meta.dirname, '../../..');
const TORCH = join(REPO, 'fixtures/torch/checkpoints/transformers.pt');
const LEGACY = join(REPO, 'fixtures/torch/checkpoints/legacy.pt');
const SHARDED = join(REPO, 'fixtures/transformers/tied-sharded');

/**
 * Every interpreter run, by where it ran (the pickle's member or file, and its offset): the
 * interpreter module with its two entry points counted, the machine itself untouched.
 */
const runs = vi.hoisted(() => [] as Array<{ path: string | undefined; offset: number }>);
vi.mock('../../torch-zip/src/pickle/interpreter.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../torch-zip/src/pickle/interpreter.ts')>();
  return {
    ...real,
    runPickle: (...a: Parameters<typeof real.runPickle>) => {
      runs.push({ path: a[2].path, offset: (a[2].baseOffset ?? 0) + a[1] });
      return real.runPickle(...a);
    },
    loadPickle: (...a: Parameters<typeof real.loadPickle>) => {
      runs.push({ path: a[1]?.path, offset: a[1]?.baseOffset ?? 0 });
      return real.loadPickle(...a);
    },
  };
});
beforeEach(() => {
  runs.length = 0;
});

/** How many times each pickle ran, by `path@offset`, for the runs whose path passes `which`. */
function runsOf(which: (path: string) => boolean): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of runs) if (r.path !== undefined && which(r.path)) out[`${r.path}@${r.offset}`] = (out[`${r.path}@${r.offset}`] ?? 0) + 1;
  return out;
}

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
    // One run of data.pkl (the scan's, whose value the reader assembles) and one read of its bytes;
    // before the scan captured its run for the reader, it ran (and was read) twice.
    expect(runsOf((p) => p.endsWith('/data.pkl'))).toEqual({ [`${pkl.name}@0`]: 1 });
    const pickleReads = folder.reads.filter((x) => x.length === pkl.compressedSize && x.offset > pkl.localHeaderOffset && x.offset < pkl.localHeaderOffset + 30 + 2 * pkl.name.length + 64);
    expect(pickleReads).toHaveLength(1);
    // Validation, the shape check and --verify share one open of the written file.
    expect(Object.fromEntries(target.folder!.opens)).toEqual({ 'out.safetensors': 1 });
  });

  it('a refusal still names every offending global, from that one run, and assembles nothing', async () => {
    const file = join(REPO, 'fixtures/torch-objects/hostile-payloads.pt');
    const input = new FolderContext(new MemoryFolder([['hostile.pt', new Uint8Array(await readFile(file))]]), 'hostile.pt', { codec: nodeZlibCodec });
    const target = new MemoryTarget('out.safetensors');
    const e = await convert({ input, target }).catch((x: unknown) => x);
    await input.close();
    expect(e).toMatchObject({ code: 'PickleDisallowedGlobal', message: expect.stringMatching(/posix\.system.*socket\.create_connection|socket\.create_connection.*posix\.system/) });
    expect(target.written.size).toBe(0);
    expect(Object.values(runsOf((p) => p.endsWith('/data.pkl')))).toEqual([1]);
  });
});

describe('one pass over the input (a torch validate)', () => {
  it('a torch ZIP: opened once, its directory parsed once, data.pkl run once, every tensor read', async () => {
    const bytes = new Uint8Array(await readFile(TORCH));
    const folder = new CountingFolder(new MemoryFolder([['model.pt', bytes]]));
    const zip = await openZip(await new MemoryFolder([['x', bytes]]).open('x'), { codec: nodeZlibCodec });
    const pkl = zip.entries.find((e) => e.name.endsWith('/data.pkl'))!;
    const input = new FolderContext(folder, 'model.pt', { codec: nodeZlibCodec });
    const r = await validate(input);
    await input.close();
    expect(r).toMatchObject({ format: 'torch', valid: true, errors: [] });
    expect(Object.fromEntries(folder.opens)).toEqual({ 'model.pt': 1 });
    expect(folder.touching('model.pt', bytes.byteLength - 22, bytes.byteLength)).toBe(1);
    // the scan's run is the reader's: before validate captured it, data.pkl ran twice
    expect(runsOf((p) => p.endsWith('/data.pkl'))).toEqual({ [`${pkl.name}@0`]: 1 });
    // the full read still happened: every storage member's bytes were read
    const storages = zip.entries.filter((e) => /\/data\/\d+$/.test(e.name));
    expect(storages.length).toBeGreaterThan(0);
    for (const e of storages) expect(folder.touching('model.pt', e.localHeaderOffset + 30, e.localHeaderOffset + 30 + e.name.length + 64 + e.compressedSize), e.name).toBeGreaterThan(0);
  });

  it('an unsafe file is invalid, naming its globals from the one run, and nothing is assembled', async () => {
    const file = join(REPO, 'fixtures/torch-objects/hostile-payloads.pt');
    const input = new FolderContext(new MemoryFolder([['hostile.pt', new Uint8Array(await readFile(file))]]), 'hostile.pt', { codec: nodeZlibCodec });
    const r = await validate(input);
    await input.close();
    expect(r.valid).toBe(false);
    const globals = r.errors.filter((e) => e.code === 'PickleDisallowedGlobal').map((e) => e.message).join(' ');
    expect(globals).toMatch(/posix\.system/);
    expect(globals).toMatch(/socket\.create_connection/);
    expect(Object.values(runsOf((p) => p.endsWith('/data.pkl')))).toEqual([1]);
  });
});

/** Both torch pipelines; each resolves to the format it read, and must run every pickle once. */
const PIPELINES: Array<[string, (input: Context) => Promise<string | null>]> = [
  ['convert', async (input) => (await convert({ input, target: new MemoryTarget('out.safetensors'), verify: true })).from],
  ['validate', async (input) => {
    const r = await validate(input);
    expect(r.errors).toEqual([]);
    return r.format;
  }],
];

describe.each(PIPELINES)('one run per pickle (%s)', (_name, run) => {
  it('a legacy torch file: each of its five pickles runs once', async () => {
    const input = new FolderContext(new MemoryFolder([['legacy.pt', new Uint8Array(await readFile(LEGACY))]]), 'legacy.pt');
    expect(await run(input)).toMatch(/^torch/);
    await input.close();
    const counted = runsOf((p) => p === 'legacy.pt');
    expect(Object.keys(counted)).toHaveLength(5);
    expect(Object.values(counted)).toEqual([1, 1, 1, 1, 1]);
  });

  it('a sharded pytorch_model-*.bin folder: each shard opened once, its data.pkl run once', async () => {
    const files: Array<[string, Uint8Array]> = [];
    for (const f of await readdir(SHARDED)) files.push([f, new Uint8Array(await readFile(join(SHARDED, f)))]);
    const folder = new CountingFolder(new MemoryFolder(files, 'tied-sharded'));
    const input = new FolderContext(folder, null, { codec: nodeZlibCodec });
    expect(await run(input)).toMatch(/^torch/);
    await input.close();
    const shards = files.map(([f]) => f).filter((f) => f.endsWith('.bin'));
    expect(shards).toHaveLength(5);
    for (const s of shards) expect(folder.opens.get(s), s).toBe(1);
    const counted = runsOf((p) => p.endsWith('/data.pkl'));
    expect(Object.keys(counted)).toHaveLength(5);
    expect(Object.values(counted)).toEqual([1, 1, 1, 1, 1]);
  });
});
