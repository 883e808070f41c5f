import { TensorportError } from './errors.ts';
import type { TensorDescriptor } from './tensor.ts';

/**
 * A descriptor's chunks, held to its declared byteLength: a writer has already promised that size
 * (in a header, a ZIP entry, a pickle), so a source that streams more or fewer bytes must fail the
 * write rather than shift every later tensor. Stops reading as soon as it has too much.
 */
export async function* exactChunks(t: TensorDescriptor, chunkSize?: number): AsyncGenerator<Uint8Array> {
  let n = 0;
  for await (const c of t.chunks(chunkSize)) {
    n += c.byteLength;
    if (n > t.byteLength) break;
    yield c;
  }
  if (n !== t.byteLength) {
    throw new TensorportError(
      'TensorByteLengthMismatch',
      `tensor ${JSON.stringify(t.name)} streamed ${n > t.byteLength ? 'more than' : n} bytes, expected ${t.byteLength}`,
      { tensor: t.name },
    );
  }
}

/**
 * Bytes of tensors produced early that may wait for their turn. Enough for two 64 MiB members to
 * inflate side by side the whole time (while one is consumed the next fills half its size); the
 * bound, not the model, sets the memory (docs/benchmarks.md, "Two members at once").
 */
export const LOOKAHEAD_BYTES = 32 * 1024 * 1024;

/**
 * The tensors' chunks in the order given, one tensor at a time as `exactChunks` gives them, except
 * that while one tensor is consumed the next one is already being produced, up to `lookahead`
 * bytes, when that work runs off the JS thread (`offThread`: DEFLATE on libuv's thread pool), so
 * two members inflate at once on two cores. Work on the JS thread (a cast, a dequantize) gains
 * nothing from it and would only hold more memory (measured: a torch → F16 cast 4.5 → 5.2 s, +25
 * MB), and a stored range has its source's own read-ahead. The bytes and their order are those of a plain loop; a
 * failure of a tensor produced early is raised when its turn comes, and whatever is still being
 * produced is stopped when the caller stops (an error, a `break`).
 */
export async function* tensorsInOrder(
  tensors: readonly TensorDescriptor[],
  chunkSize?: number,
  lookahead = LOOKAHEAD_BYTES,
): AsyncGenerator<readonly [TensorDescriptor, AsyncIterable<Uint8Array>]> {
  const start = (t: TensorDescriptor): Ahead | AsyncIterable<Uint8Array> =>
    t.offThread && !t.range && lookahead > 0 ? new Ahead(exactChunks(t, chunkSize), lookahead) : exactChunks(t, chunkSize);
  let current: Ahead | AsyncIterable<Uint8Array> | null = null;
  let next = tensors.length ? start(tensors[0]!) : null;
  try {
    for (let i = 0; i < tensors.length; i++) {
      current = next!;
      next = i + 1 < tensors.length ? start(tensors[i + 1]!) : null;
      yield [tensors[i]!, current];
      if (current instanceof Ahead) await current.stop();
    }
  } finally {
    await Promise.all([current, next].map((a) => (a instanceof Ahead ? a.stop() : undefined)));
  }
}

/** A stream pulled into a queue of at most `limit` bytes from the moment it is made, read back in order. */
class Ahead implements AsyncIterable<Uint8Array> {
  private readonly queue: Uint8Array[] = [];
  private queued = 0;
  private ended = false;
  private failed = false;
  private failure: unknown;
  private stopped = false;
  /** Wakes the pump (room in the queue, or stop) or the reader (a chunk, the end). */
  private wakePump: (() => void) | null = null;
  private wakeReader: (() => void) | null = null;
  private readonly pumped: Promise<void>;

  constructor(
    private readonly source: AsyncIterable<Uint8Array>,
    private readonly limit: number,
  ) {
    this.pumped = this.pump();
  }

  private async pump(): Promise<void> {
    const it = this.source[Symbol.asyncIterator]();
    try {
      for (;;) {
        while (this.queued >= this.limit && !this.stopped) await new Promise<void>((r) => (this.wakePump = r));
        if (this.stopped) {
          await it.return?.();
          break;
        }
        const r = await it.next();
        if (r.done) break;
        if (this.stopped) {
          await it.return?.();
          break;
        }
        this.queue.push(r.value);
        this.queued += r.value.byteLength;
        this.wake('reader');
      }
    } catch (e) {
      this.failed = true;
      this.failure = e;
    } finally {
      this.ended = true;
      this.wake('reader');
    }
  }

  private wake(who: 'pump' | 'reader'): void {
    const w = who === 'pump' ? this.wakePump : this.wakeReader;
    if (who === 'pump') this.wakePump = null;
    else this.wakeReader = null;
    w?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Uint8Array> {
    try {
      for (;;) {
        const chunk = this.queue.shift();
        if (chunk) {
          this.queued -= chunk.byteLength;
          this.wake('pump');
          yield chunk;
          continue;
        }
        if (this.ended) {
          if (this.failed) throw this.failure;
          return;
        }
        await new Promise<void>((r) => (this.wakeReader = r));
      }
    } finally {
      await this.stop();
    }
  }

  /** Stops producing (the source's `return` runs, e.g. a zlib stream is destroyed) and waits for it. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.queue.length = 0;
    this.queued = 0;
    this.wake('pump');
    await this.pumped;
  }
}
