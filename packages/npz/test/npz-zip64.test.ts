import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openNpz } from '../src/index.ts';
import { TestFileSource, bytesOf, fixture } from './helpers.ts';

const SIZE = 4294968958;
let dir = '';
let path = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tp-npz64-'));
  path = join(dir, 'big_zip64.npz');
  const head = await fixture('big/big_zip64.head4096.bin');
  const tail = await fixture('big/big_zip64.tail4096.bin');
  const fh = await open(path, 'w');
  await fh.truncate(SIZE);
  await fh.write(head, 0, head.byteLength, 0);
  await fh.write(tail, 0, tail.byteLength, SIZE - tail.byteLength);
  await fh.close();
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

it('opens numpy’s >4 GiB npz (sparse rebuild) reading only headers, with the big array as a range', async () => {
  const src = await TestFileSource.open(path);
  const ck = await openNpz(src);
  expect(ck.tensors.map((t) => [t.name, t.dtype, t.shape])).toEqual([
    ['big', 'U8', [4294968320]],
    ['small_after', expect.any(String), expect.any(Array)],
  ]);
  const big = ck.tensors[0]!;
  // local header 30 + "big.npy" 7 + ZIP64 extra 20 = 57, then the 128-byte npy header
  expect(big.range!.offset).toBe(185);
  expect(big.range!.offset + big.byteLength).toBeGreaterThan(2 ** 32);
  // the last 64 KiB (end record search), the directory, two local headers and two npy headers
  expect(src.bytesRead).toBeLessThan(67_000);
  const small = ck.tensors[1]!;
  expect(small.range!.offset).toBeGreaterThan(2 ** 32);
  expect((await bytesOf(small)).byteLength).toBe(small.byteLength);
  await ck.close();
});

it('big_compressed_zeros.npz: a deflated member past 4 GiB in an archive without a ZIP64 end record', async () => {
  const ck = await openNpz(new (await import('@tensorport/core')).BytesSource(await readFile(new URL('../../../fixtures/npz/big/big_compressed_zeros.npz', import.meta.url))));
  const [zeros, tail] = ck.tensors;
  expect(zeros!.byteLength).toBeGreaterThan(2 ** 32);
  expect(zeros!.range).toBeUndefined();
  expect(tail!.name).toBe('tail');
  expect((await bytesOf(tail!)).byteLength).toBe(tail!.byteLength);
});
