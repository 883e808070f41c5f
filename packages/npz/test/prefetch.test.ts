import { describe, expect, it } from 'vitest';
import { BytesSource, writeOrder } from '@tensorport/core';
import { nodeZlibCodec } from '@tensorport/core/node';
import { openNpz, writeNpz } from '../src/index.ts';
import { MemberPrefetch, successorsOf } from '../src/prefetch.ts';
import { PatchableMemorySink, bytesOf, memTensor } from './helpers.ts';

/** Member i's stream: `chunks` chunks of `size` bytes, each filled with i; records what was pulled and whether it was stopped. */
function fakeMembers(count: number, chunks: number, size: number) {
  const opened: number[] = [];
  const pulled = new Array<number>(count).fill(0);
  const stopped = new Array<boolean>(count).fill(false);
  const open = (i: number): AsyncIterable<Uint8Array> => {
    opened.push(i);
    return (async function* () {
      try {
        for (let c = 0; c < chunks; c++) {
          pulled[i]! += size;
          yield new Uint8Array(size).fill(i);
        }
      } finally {
        stopped[i] = pulled[i]! < chunks * size;
      }
    })();
  };
  return { opened, pulled, stopped, open };
}

async function drain(s: AsyncIterable<Uint8Array>): Promise<number[]> {
  const seen: number[] = [];
  for await (const c of s) seen.push(c[0]!, c.byteLength);
  return seen;
}

const settle = () => new Promise((r) => setTimeout(r, 10));

describe('MemberPrefetch', () => {
  it('opens the next member once, ahead of its reader, and hands over the same bytes', async () => {
    const m = fakeMembers(3, 4, 100);
    const archive = [0, 1, 2];
    const p = new MemberPrefetch(successorsOf(archive), [true, true, true], m.open, 250);
    expect(await drain(p.stream(0))).toEqual([0, 100, 0, 100, 0, 100, 0, 100]);
    expect(m.opened).toEqual([0, 1]);
    await settle();
    // Bounded: the member read ahead stopped pulling once it held `limit` bytes (here 3 chunks ≥ 250).
    expect(m.pulled[1]).toBe(300);
    expect(await drain(p.stream(1))).toEqual([1, 100, 1, 100, 1, 100, 1, 100]);
    expect(await drain(p.stream(2))).toEqual([2, 100, 2, 100, 2, 100, 2, 100]);
    expect(m.opened).toEqual([0, 1, 2]);
    await p.close();
  });

  it('follows the order the reader goes in, and a wrong guess only costs the bytes read ahead', async () => {
    const m = fakeMembers(4, 2, 10);
    const other = [3, 1, 0, 2];
    const p = new MemberPrefetch(successorsOf([0, 1, 2, 3], other), [true, true, true, true], m.open, 1000);
    await drain(p.stream(3)); // the other order's first: guess its successor (1)
    expect(m.opened).toEqual([3, 1]);
    await drain(p.stream(1));
    await drain(p.stream(0));
    await drain(p.stream(2));
    expect(m.opened).toEqual([3, 1, 0, 2]);
    // Back to archive order after 2 → 3 would be a miss: 3 is opened again, nothing breaks.
    expect(await drain(p.stream(3))).toEqual([3, 10, 3, 10]);
    await p.close();
  });

  it('fetches nothing ahead to or from a stored member, and stops what it fetched ahead on close', async () => {
    const m = fakeMembers(4, 5, 10);
    const p = new MemberPrefetch(successorsOf([0, 1, 2, 3]), [true, false, true, true], m.open, 20);
    await drain(p.stream(0));
    expect(m.opened).toEqual([0]);
    await drain(p.stream(1));
    expect(m.opened).toEqual([0, 1]);
    await drain(p.stream(2));
    expect(m.opened).toEqual([0, 1, 2, 3]);
    await settle();
    await p.close();
    expect(m.stopped[3]).toBe(true);
  });

  it('stops the stream of a member read ahead when its reader stops early', async () => {
    const m = fakeMembers(2, 10, 10);
    const p = new MemberPrefetch(successorsOf([0, 1]), [true, true], m.open, 30);
    await drain(p.stream(0));
    for await (const c of p.stream(1)) {
      expect(c[0]).toBe(1);
      break;
    }
    expect(m.stopped[1]).toBe(true);
    await p.close();
  });
});

describe('openNpz with members inflated ahead', () => {
  const N = 5;
  const tensors = Array.from({ length: N }, (_, i) => {
    const data = new Uint8Array(300_000);
    for (let j = 0; j < data.byteLength; j++) data[j] = (j * (i + 3)) ^ (j >>> 9);
    return memTensor(`t${[3, 0, 4, 1, 2][i]}`, 'U8', [data.byteLength], data, 65_536);
  });
  const archive = async () => {
    const sink = new PatchableMemorySink();
    await writeNpz(tensors, sink, { compress: true, codec: nodeZlibCodec });
    return sink.bytes();
  };

  it('gives every tensor its bytes in archive order, in writer order and backwards', async () => {
    const bytes = await archive();
    const want = await Promise.all(tensors.map((t) => bytesOf(t)));
    const ck = await openNpz(new BytesSource(bytes), { codec: nodeZlibCodec });
    for (const order of [[0, 1, 2, 3, 4], writeOrder(ck.tensors), [4, 3, 2, 1, 0]]) {
      // Buffer#equals: a deep toEqual of 300 kB arrays takes seconds each.
      for (const i of order) expect(Buffer.from(await bytesOf(ck.tensors[i]!)).equals(want[i]!), ck.tensors[i]!.name).toBe(true);
    }
    await ck.close();
  });

  it('still fails a member with a bad CRC-32 when it is read, and only then', async () => {
    const bytes = (await archive()).slice();
    const probe = await openNpz(new BytesSource(bytes), { codec: nodeZlibCodec });
    const bad = probe.archive.get('t4.npy')!; // the third member: read ahead while the second is read
    await probe.close();
    for (const at of [bad.localHeaderOffset + 14, bad.centralOffset + 16]) bytes[at]! ^= 0x5a;
    const ck = await openNpz(new BytesSource(bytes), { codec: nodeZlibCodec });
    await bytesOf(ck.tensors[0]!);
    await bytesOf(ck.tensors[1]!);
    await settle();
    await expect(bytesOf(ck.tensors[2]!)).rejects.toMatchObject({ code: 'ZipCrcMismatch', tensor: 't4.npy' });
    await ck.close();
  });
});
