import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TensorportError } from '../src/errors.ts';
import { openCheckpointPath, writeCheckpointPath } from '../src/node/paths.ts';
import type { TensorDescriptor } from '../src/tensor.ts';
import { memTensor } from './helpers/mem-tensor.ts';

const root = mkdtempSync(join(tmpdir(), 'tp-shard-jobs-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

// 1 MiB tensors read in 256 KiB chunks: pooled buffers, read-ahead and writeOwned all take part.
const MIB = 1024 * 1024;
const CHUNK = 256 * 1024;
const tensors = Array.from({ length: 9 }, (_, i) => memTensor(`layers.${i}.weight`, 'F32', [MIB / 4 / (i % 3 === 0 ? 1 : 2)]));

function filesOf(dir: string): Map<string, Buffer> {
  return new Map(readdirSync(dir).sort().map((f) => [f, readFileSync(join(dir, f))]));
}

describe('sharded output written concurrently', () => {
  it('is byte-identical at jobs 1 and jobs 3, from a sharded input on disk', async () => {
    const input = join(root, 'in') + '/';
    await writeCheckpointPath(tensors, { format: 'pt' }, input, { maxShardSize: 1.5 * MIB, fsync: false, chunkSize: CHUNK });
    expect(readdirSync(input).filter((f) => f.endsWith('.safetensors')).length).toBeGreaterThanOrEqual(3);
    const outs: Array<Map<string, Buffer>> = [];
    for (const jobs of [1, 3]) {
      const ck = await openCheckpointPath(input);
      try {
        const out = join(root, `out-${jobs}`) + '/';
        const progress: number[] = [];
        // A different shard size than the input's, so output shards read across input shards.
        await writeCheckpointPath(ck.tensors, ck.metadata, out, { maxShardSize: 2 * MIB, fsync: jobs === 3, chunkSize: CHUNK, jobs, onProgress: (d) => progress.push(d) });
        expect(progress.every((d, i) => i === 0 || d >= progress[i - 1]!)).toBe(true);
        outs.push(filesOf(out));
      } finally {
        await ck.close();
      }
    }
    const [one, three] = outs as [Map<string, Buffer>, Map<string, Buffer>];
    expect([...three.keys()]).toEqual([...one.keys()]);
    expect(one.size).toBeGreaterThan(3);
    for (const [name, bytes] of one) expect(three.get(name)!.equals(bytes), name).toBe(true);
    // And the values are the input's.
    const back = await openCheckpointPath(join(root, 'out-3'));
    try {
      for (const t of tensors) {
        const got = back.tensors.find((x) => x.name === t.name)!;
        const parts: Uint8Array[] = [];
        for await (const c of got.chunks(CHUNK)) parts.push(c.slice());
        const want: Uint8Array[] = [];
        for await (const c of t.chunks()) want.push(c);
        expect(Buffer.concat(parts).equals(Buffer.concat(want)), t.name).toBe(true);
      }
    } finally {
      await back.close();
    }
  });

  it('leaves nothing behind when one shard fails while others are being written', async () => {
    const failing: TensorDescriptor = {
      ...tensors[4]!,
      async *chunks() {
        yield new Uint8Array(16);
        throw new TensorportError('IoError', 'read error in the middle of a shard');
      },
    };
    const out = join(root, 'fail') + '/';
    const list = tensors.map((t, i) => (i === 4 ? failing : t));
    await expect(writeCheckpointPath(list, null, out, { maxShardSize: 2 * MIB, fsync: false, jobs: 3 })).rejects.toThrow('read error');
    expect(readdirSync(out)).toEqual([]);
  });

  it('refuses jobs that are not a positive integer', async () => {
    const out = join(root, 'bad') + '/';
    await expect(writeCheckpointPath(tensors, null, out, { maxShardSize: 2 * MIB, fsync: false, jobs: 0 })).rejects.toMatchObject({ code: 'InvalidOption' });
  });
});
