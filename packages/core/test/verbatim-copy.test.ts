import { chmod, mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileSink, FileSource, openCheckpointPath, writeCheckpointPath } from '../src/node/index.ts';
import { MemorySink, writeSafetensors, type TensorDescriptor } from '../src/index.ts';
import { memTensor } from './helpers/mem-tensor.ts';

// A safetensors file rewritten as it is (same tensors, same metadata, the canonical layout) is a
// copy of its input: FileSink makes it with fs.copyFile (copy_file_range), reading only the header.
let dir: string;
let input: string;
let inputBytes: Uint8Array;
const META = { format: 'pt' };
const TENSORS = [memTensor('b.weight', 'F32', [256, 130]), memTensor('a.bias', 'F16', [999]), memTensor('c', 'U8', [3, 5])];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tp-verbatim-'));
  input = join(dir, 'in.safetensors');
  const mem = new MemorySink();
  await writeSafetensors(TENSORS, META, mem);
  inputBytes = mem.bytes();
  await writeFile(input, inputBytes);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function rewrite(from: string, to: string, metadata: Record<string, string> | null = META, mutate?: (t: readonly TensorDescriptor[]) => readonly TensorDescriptor[]) {
  const ck = await openCheckpointPath(from);
  try {
    const source = ck.tensors[0]!.range!.source;
    const before = source.bytesRead;
    await writeCheckpointPath(mutate ? mutate(ck.tensors) : ck.tensors, metadata, to, { fsync: false });
    return { read: source.bytesRead - before };
  } finally {
    await ck.close();
  }
}

describe('verbatim rewrite by in-kernel copy', () => {
  it('copies an unchanged file whole, reading only its header', async () => {
    const out = join(dir, 'same.safetensors');
    const { read } = await rewrite(input, out);
    expect(new Uint8Array(await readFile(out))).toEqual(inputBytes);
    const headerBytes = 8 + Number(new DataView(inputBytes.buffer, inputBytes.byteOffset).getBigUint64(0, true));
    expect(read).toBe(headerBytes);
  });

  it('streams when the header would change (other metadata), with the right bytes', async () => {
    const out = join(dir, 'meta.safetensors');
    const { read } = await rewrite(input, out, { format: 'pt', note: 'x' });
    const expected = new MemorySink();
    await writeSafetensors(TENSORS, { format: 'pt', note: 'x' }, expected);
    expect(new Uint8Array(await readFile(out))).toEqual(expected.bytes());
    expect(read).toBeGreaterThanOrEqual(TENSORS.reduce((n, t) => n + t.byteLength, 0));
  });

  it('streams when a tensor is left out (the layout moves)', async () => {
    const out = join(dir, 'fewer.safetensors');
    await rewrite(input, out, META, (ts) => ts.filter((t) => t.name !== 'a.bias'));
    const expected = new MemorySink();
    await writeSafetensors(TENSORS.filter((t) => t.name !== 'a.bias'), META, expected);
    expect(new Uint8Array(await readFile(out))).toEqual(expected.bytes());
  });

  it('gives the output the mode of any written file, not the input\'s', async () => {
    const readOnly = join(dir, 'ro.safetensors');
    await writeFile(readOnly, inputBytes);
    await chmod(readOnly, 0o400);
    const copied = join(dir, 'from-ro.safetensors');
    const streamed = join(dir, 'streamed.safetensors');
    await rewrite(readOnly, copied);
    await rewrite(readOnly, streamed, { format: 'pt', other: '1' });
    expect((await stat(copied)).mode & 0o777).toBe((await stat(streamed)).mode & 0o777);
    expect((await stat(copied)).mode & 0o200).toBe(0o200);
  });

  it('copies what was opened: a file renamed over the path after opening is not copied', async () => {
    const moving = join(dir, 'moving.safetensors');
    await writeFile(moving, inputBytes);
    const ck = await openCheckpointPath(moving);
    try {
      // Same size, other bytes, now under the path the source was opened by.
      const impostor = join(dir, 'impostor.safetensors');
      await writeFile(impostor, inputBytes.map((b) => b ^ 0xff));
      await rename(impostor, moving);
      const out = join(dir, 'from-moving.safetensors');
      await writeCheckpointPath(ck.tensors, META, out, { fsync: false });
      expect(new Uint8Array(await readFile(out))).toEqual(inputBytes);
    } finally {
      await ck.close();
    }
  });

  it('leaves the sink empty and usable when the source cannot be copied', async () => {
    const sink = await FileSink.create(join(dir, 'not-copied.safetensors'), { fsync: false });
    const source = await FileSource.open(input);
    await source.close();
    expect(await sink.copyWhole(source)).toBe(false);
    await sink.write(new Uint8Array([1, 2, 3]));
    await sink.commit();
    expect([...(await readFile(join(dir, 'not-copied.safetensors')))]).toEqual([1, 2, 3]);
  });

  it('copies each shard of a re-shard that keeps the shards as they are', async () => {
    const shardsIn = join(dir, 'shards-in') + '/';
    const src = await openCheckpointPath(input);
    const shardSize = TENSORS[0]!.byteLength;
    try {
      await writeCheckpointPath(src.tensors, META, shardsIn, { fsync: false, maxShardSize: shardSize });
    } finally {
      await src.close();
    }
    const shardsOut = join(dir, 'shards-out') + '/';
    const ck = await openCheckpointPath(shardsIn);
    const sources = new Set(ck.tensors.map((t) => t.range!.source));
    try {
      const before = [...sources].reduce((n, s) => n + s.bytesRead, 0);
      await writeCheckpointPath(ck.tensors, META, shardsOut, { fsync: false, maxShardSize: shardSize });
      const read = [...sources].reduce((n, s) => n + s.bytesRead, 0) - before;
      expect(read).toBeLessThan(TENSORS[0]!.byteLength);
    } finally {
      await ck.close();
    }
    const names = (await readdir(shardsIn)).sort();
    expect(names.filter((n) => n.endsWith('.safetensors')).length).toBeGreaterThan(1);
    expect((await readdir(shardsOut)).sort()).toEqual(names);
    for (const name of names) {
      expect(await readFile(join(shardsOut, name))).toEqual(await readFile(join(shardsIn, name)));
    }
  });
});
