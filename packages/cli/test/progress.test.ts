import { describe, expect, it } from 'vitest';
import { ProgressBar } from '../src/progress.ts';

/** A stderr stand-in and a clock the test moves by hand: no real time involved. */
function setup(isTTY: boolean) {
  const writes: string[] = [];
  let now = 0;
  const stream = { isTTY, columns: 100, write: (s: string) => writes.push(s) };
  const bar = new ProgressBar(stream, 1000, 'converting', { now: () => now, delay: 1000, interval: 100 });
  return { writes, bar, advance: (ms: number) => (now += ms) };
}

describe('ProgressBar', () => {
  it('draws nothing when stderr is not a TTY', () => {
    const { writes, bar, advance } = setup(false);
    advance(5000);
    bar.update(500);
    bar.finish();
    expect(writes).toEqual([]);
  });

  it('stays silent for work shorter than the delay', () => {
    const { writes, bar, advance } = setup(true);
    advance(999);
    bar.update(999);
    bar.finish();
    expect(writes).toEqual([]);
  });

  it('draws done/total, percentage and rate after the delay, at most once per interval, and clears its line', () => {
    const { writes, bar, advance } = setup(true);
    advance(2000);
    bar.update(500);
    expect(writes).toHaveLength(1);
    // 500 bytes in 2 s: 250 B/s.
    expect(writes[0]).toMatch(/^\rconverting \[#+\.+\]  50%  500 B \/ 1000 B  250 B\/s\x1b\[K$/);
    advance(50);
    bar.update(600);
    expect(writes).toHaveLength(1);
    advance(50);
    bar.update(1000);
    expect(writes).toHaveLength(2);
    expect(writes[1]).toContain('100%');
    bar.finish();
    expect(writes[2]).toBe('\r\x1b[K');
  });

  it('fits a narrow terminal', () => {
    const bar = new ProgressBar({ isTTY: true, columns: 60, write: () => undefined }, 10 * 1024 ** 3, '', { now: () => 0 });
    expect(bar.render(5 * 1024 ** 3, 10_000).length).toBeLessThanOrEqual(60);
  });
});
