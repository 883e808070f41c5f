/**
 * Many small reads (a ZIP member's first bytes, a .npy header) answered in order with up to
 * `window` of them in flight: awaiting each in turn made a 10,000-member archive wait on the file
 * system (or the network) 10,000 times in a row (docs/benchmarks.md, "Many tensors" and "One pass
 * over a pickle").
 *
 * Yields `[items[i], await read(items[i])]` for i = 0, 1, …; a read that fails rejects when its turn comes, not
 * before, and one still in flight when the consumer stops is awaited by nobody and never reported
 * as an unhandled rejection.
 */
/** Reads in flight by default: small reads (a few hundred bytes) of a local file or one HTTP connection. */
export const READ_AHEAD = 64;

export async function* readInOrder<T, R>(items: readonly T[], read: (item: T) => Promise<R>, window = READ_AHEAD): AsyncGenerator<[T, R]> {
  const ahead: Array<Promise<R> | undefined> = [];
  const start = (i: number): void => {
    if (i >= items.length) return;
    const p = read(items[i]!);
    p.catch(() => {});
    ahead[i] = p;
  };
  for (let i = 0; i < Math.max(1, window); i++) start(i);
  for (let i = 0; i < items.length; i++) {
    const value = await ahead[i]!;
    ahead[i] = undefined;
    start(i + Math.max(1, window));
    yield [items[i]!, value];
  }
}
