import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readInOrder } from '../src/index.ts';

/** A read that settles after a random number of microtask turns, counting how many are in flight. */
function tracker(delays: readonly number[]) {
  let inFlight = 0;
  let most = 0;
  const read = async (i: number): Promise<number> => {
    inFlight++;
    most = Math.max(most, inFlight);
    for (let k = 0; k < delays[i % delays.length]!; k++) await Promise.resolve();
    inFlight--;
    return i * 10;
  };
  return { read, most: () => most };
}

describe('readInOrder', () => {
  it('yields every item with its read in order, never more than the window in flight', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 60 }), fc.integer({ min: 1, max: 9 }), fc.array(fc.integer({ min: 0, max: 20 }), { minLength: 1, maxLength: 8 }), async (n, window, delays) => {
        const items = Array.from({ length: n }, (_, i) => i);
        const t = tracker(delays);
        const got: Array<[number, number]> = [];
        for await (const pair of readInOrder(items, t.read, window)) got.push(pair);
        expect(got).toEqual(items.map((i) => [i, i * 10]));
        expect(t.most()).toBeLessThanOrEqual(window);
        if (n >= window && delays.some((d) => d > 0)) expect(t.most()).toBeGreaterThan(0);
      }),
    );
  });

  it('keeps reads ahead of the consumer (the point of it)', async () => {
    const t = tracker([5]);
    const items = Array.from({ length: 100 }, (_, i) => i);
    for await (const _ of readInOrder(items, t.read, 16)) void _;
    expect(t.most()).toBe(16);
  });

  it('a failed read rejects at its turn, after the items before it, and nothing goes unhandled', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      const got: number[] = [];
      const read = async (i: number) => {
        if (i === 3 || i === 5) throw new Error(`bad ${i}`);
        return i;
      };
      await expect(
        (async () => {
          for await (const [, v] of readInOrder([0, 1, 2, 3, 4, 5, 6], read, 8)) got.push(v);
        })(),
      ).rejects.toThrow('bad 3');
      expect(got).toEqual([0, 1, 2]);
      await new Promise((r) => setTimeout(r, 20));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('stops starting reads when the consumer stops', async () => {
    let started = 0;
    const read = async (i: number) => {
      started++;
      return i;
    };
    for await (const [i] of readInOrder(Array.from({ length: 1000 }, (_, k) => k), read, 4)) if (i === 1) break;
    expect(started).toBeLessThanOrEqual(6);
  });
});
