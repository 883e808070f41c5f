import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { tensorsInOrder } from '../src/tensor-chunks.ts';
import { BytesSource } from '../src/io/source.ts';
import type { TensorDescriptor } from '../src/tensor.ts';
import { patternBytes } from './helpers/mem-tensor.ts';
import { codeOf } from './helpers/error-code.ts';

interface Log {
  events: string[];
  produced: number;
  consumed: number;
  /** Most bytes produced and not yet consumed at any moment. */
  peak: number;
  closed: string[];
}

const tick = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A tensor produced off the JS thread (as inflating is) that logs what it produces, waiting `delay` ms before each chunk. */
function computed(log: Log, name: string, bytes: Uint8Array, chunk: number, delay = 0, declared = bytes.byteLength, offThread = true): TensorDescriptor {
  return {
    name, dtype: 'U8', shape: [declared], byteLength: declared, offThread,
    async *chunks() {
      try {
        for (let pos = 0; pos < bytes.byteLength; pos += chunk) {
          if (delay) await tick(delay);
          else await Promise.resolve();
          const c = bytes.slice(pos, pos + chunk);
          log.produced += c.byteLength;
          log.peak = Math.max(log.peak, log.produced - log.consumed);
          log.events.push(`${name}+`);
          yield c;
        }
      } finally {
        log.closed.push(name);
      }
    },
  };
}

async function drain(log: Log, tensors: TensorDescriptor[], lookahead?: number): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for await (const [t, chunks] of tensorsInOrder(tensors, undefined, lookahead)) {
    const parts: Uint8Array[] = [];
    for await (const c of chunks) {
      log.consumed += c.byteLength;
      parts.push(c);
    }
    log.events.push(`${t.name}.`);
    out.push(Buffer.concat(parts));
  }
  return out;
}

const newLog = (): Log => ({ events: [], produced: 0, consumed: 0, peak: 0, closed: [] });

describe('tensorsInOrder: the next computed tensor is produced while the current one is consumed', () => {
  it('yields every tensor\'s bytes in order, holding at most the lookahead (+ two chunks) per tensor, whatever the sizes', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ size: fc.integer({ min: 0, max: 3000 }), chunk: fc.integer({ min: 1, max: 700 }) }), { maxLength: 6 }),
        fc.integer({ min: 0, max: 2000 }),
        async (specs, lookahead) => {
          const log = newLog();
          const data = specs.map((s, i) => patternBytes(s.size, i));
          const tensors = specs.map((s, i) => computed(log, `t${i}`, data[i]!, s.chunk));
          const out = await drain(log, tensors, lookahead);
          expect(out.map((b) => Buffer.from(b).toString('hex'))).toEqual(data.map((b) => Buffer.from(b).toString('hex')));
          const chunk = Math.max(0, ...specs.map((s) => s.chunk));
          // the current tensor and the next one: each holds less than lookahead + a chunk queued, and one in hand
          expect(log.peak).toBeLessThanOrEqual(2 * (lookahead + 2 * chunk));
          expect(log.closed.sort()).toEqual(specs.map((_, i) => `t${i}`).sort());
        },
      ),
      { numRuns: 150 },
    );
  });

  it('starts the next tensor before the current one is done, and no further', async () => {
    const log = newLog();
    const tensors = [0, 1, 2].map((i) => computed(log, `t${i}`, patternBytes(4000, i), 1000, 2));
    await drain(log, tensors, 1 << 20);
    // t1 is produced while t0 is still being consumed; t2 waits until t0 is done
    expect(log.events.indexOf('t1+')).toBeLessThan(log.events.indexOf('t0.'));
    expect(log.events.indexOf('t2+')).toBeGreaterThan(log.events.indexOf('t0.'));
  });

  it('a lookahead of 0 is the plain loop: nothing of a tensor is produced before its turn', async () => {
    const log = newLog();
    const tensors = [0, 1].map((i) => computed(log, `t${i}`, patternBytes(3000, i), 1000));
    await drain(log, tensors, 0);
    expect(log.events).toEqual(['t0+', 't0+', 't0+', 't0.', 't1+', 't1+', 't1+', 't1.']);
  });

  it('does not produce ahead what is computed on the JS thread (a cast): nothing to overlap, only memory', async () => {
    const log = newLog();
    const tensors = [0, 1].map((i) => computed(log, `t${i}`, patternBytes(3000, i), 1000, 2, 3000, false));
    await drain(log, tensors, 1 << 20);
    expect(log.events).toEqual(['t0+', 't0+', 't0+', 't0.', 't1+', 't1+', 't1+', 't1.']);
  });

  it('leaves tensors stored as a range to their source\'s read-ahead', async () => {
    const log = newLog();
    const src = new BytesSource(patternBytes(5000, 9), 'stored');
    let calls = 0;
    const stored: TensorDescriptor = {
      name: 'stored', dtype: 'U8', shape: [5000], byteLength: 5000, range: { source: src, offset: 0 }, offThread: true,
      async *chunks() {
        calls++;
        log.events.push('stored+');
        yield await src.read(0, 5000);
      },
    };
    const first = computed(log, 'first', patternBytes(3000, 1), 1000, 2);
    await drain(log, [first, stored], 1 << 20);
    expect(calls).toBe(1);
    expect(log.events.indexOf('stored+')).toBeGreaterThan(log.events.indexOf('first.'));
  });

  it('a tensor that fails while produced early fails at its turn, after every byte before it', async () => {
    const log = newLog();
    // t1 streams 100 bytes but declares 200: TensorByteLengthMismatch, known long before t0 is done
    const tensors = [computed(log, 't0', patternBytes(3000, 0), 500, 3), computed(log, 't1', patternBytes(100, 1), 100, 0, 200)];
    const seen: number[] = [];
    const run = (async () => {
      for await (const [, chunks] of tensorsInOrder(tensors, undefined, 1 << 20)) for await (const c of chunks) seen.push(c.byteLength);
    })();
    expect(await codeOf(run)).toBe('TensorByteLengthMismatch');
    expect(seen.reduce((a, b) => a + b, 0)).toBe(3000 + 100);
  });

  it('stops the tensor being produced ahead when the consumer stops (its stream is closed before return resolves)', async () => {
    const log = newLog();
    const tensors = [0, 1, 2].map((i) => computed(log, `t${i}`, patternBytes(10_000, i), 100, 1));
    let n = 0;
    const failing = (async () => {
      for await (const [, chunks] of tensorsInOrder(tensors, undefined, 1 << 20)) {
        for await (const _ of chunks) if (++n === 5) throw new Error('sink full');
      }
    })();
    await expect(failing).rejects.toThrow('sink full');
    expect(log.closed.sort()).toEqual(['t0', 't1']);
    const produced = log.produced;
    await tick(20);
    expect(log.produced).toBe(produced);
  });
});
