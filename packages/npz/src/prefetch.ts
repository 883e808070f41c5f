/**
 * Bytes of a member inflated ahead of its reader (2 × DEFAULT_CHUNK): bounded whatever the
 * member's size. 16 MiB moved more of each member's inflate off the critical path but, with the
 * zip reader's reads, peaked at 191–233 MiB RSS on a 2 GiB deflated npz (the limit is 200).
 */
export const PREFETCH_BYTES = 8 * 1024 * 1024;
/** Members inflated ahead at once: one per consumer for up to two interleaved consumers (shards written concurrently). */
const MAX_AHEAD = 2;

/**
 * A member's stream started before anyone asked for it: its chunks are pulled into a buffer of at
 * most `limit` bytes, then it waits. `take` hands over the buffered chunks and then the rest of the
 * same stream (errors included, in their place); `drop` stops it (its inflater and its reads).
 */
class Ahead {
  private readonly chunks: Uint8Array[] = [];
  private bytes = 0;
  private ended = false;
  private failure: { error: unknown } | null = null;
  private stopped = false;
  private readonly filling: Promise<void>;

  constructor(private readonly it: AsyncIterator<Uint8Array>, limit: number) {
    this.filling = this.fill(limit);
  }

  private async fill(limit: number): Promise<void> {
    try {
      while (!this.stopped && this.bytes < limit) {
        const r = await this.it.next();
        if (r.done) {
          this.ended = true;
          return;
        }
        this.chunks.push(r.value);
        this.bytes += r.value.byteLength;
      }
    } catch (error) {
      this.ended = true;
      this.failure = { error };
    }
  }

  async *take(): AsyncGenerator<Uint8Array> {
    this.stopped = true;
    await this.filling;
    try {
      while (this.chunks.length) yield this.chunks.shift()!;
      if (this.failure) throw this.failure.error;
      while (!this.ended) {
        let r: IteratorResult<Uint8Array>;
        try {
          r = await this.it.next();
        } catch (e) {
          this.ended = true;
          throw e;
        }
        if (r.done) this.ended = true;
        else yield r.value;
      }
    } finally {
      // A reader that stops early (a bomb guard, an error downstream) stops the stream with it.
      if (!this.ended) await this.close();
    }
  }

  async drop(): Promise<void> {
    this.stopped = true;
    await this.filling;
    this.chunks.length = 0;
    if (!this.ended) await this.close();
  }

  private async close(): Promise<void> {
    this.ended = true;
    await this.it.return?.(undefined);
  }
}

/**
 * Inflates the member a reader will most likely ask for next while it reads the current one: node's
 * zlib inflates on the thread pool, so on two cores the next member's first `PREFETCH_BYTES`
 * inflate beside the current member instead of after it (a member's DEFLATE stream itself is
 * serial). "Next" follows the order the reader has been going in: the archive's, or the
 * safetensors writer's (`successors`); a wrong guess costs at most `PREFETCH_BYTES` of inflating.
 * Only deflated members are fetched ahead, and only while a deflated one is read: a stored member
 * has nothing to inflate.
 */
export class MemberPrefetch {
  private readonly ahead = new Map<number, Ahead>();
  private last = -1;
  private order = 0;

  constructor(
    /** Per order, each member's successor (-1: none). The first is the archive's. */
    private readonly successors: readonly (readonly number[])[],
    private readonly deflated: readonly boolean[],
    /** Member `i`'s verified stream; `chunkSize` as the reader asked (the input read size when deflated: same bytes out). */
    private readonly open: (i: number, chunkSize?: number) => AsyncIterable<Uint8Array>,
    private readonly limit = PREFETCH_BYTES,
  ) {}

  /** Member `i`'s stream, from what was fetched ahead of it if anything was. */
  stream(i: number, chunkSize?: number): AsyncIterable<Uint8Array> {
    const hit = this.ahead.get(i);
    this.ahead.delete(i);
    const s = hit ? hit.take() : this.open(i, chunkSize);
    this.follow(i);
    this.fetchAfter(i);
    return s;
  }

  /** Stops every stream fetched ahead (before the archive's source closes under them). */
  async close(): Promise<void> {
    const all = [...this.ahead.values()];
    this.ahead.clear();
    await Promise.all(all.map((a) => a.drop().catch(() => {})));
  }

  /** Which order explains the step from the last member asked for to `i`; kept when none does. */
  private follow(i: number): void {
    if (this.last >= 0) {
      const k = this.successors.findIndex((next) => next[this.last] === i);
      if (k >= 0) this.order = k;
    } else if (i !== 0) {
      // The first member asked for: the archive's first, or the first of another order.
      const k = this.successors.findIndex((next, n) => n > 0 && firstOf(next) === i);
      if (k >= 0) this.order = k;
    }
    this.last = i;
  }

  private fetchAfter(i: number): void {
    // Not beside a stored member: it streams through the source's read-ahead, which reads elsewhere cancel.
    if (!this.deflated[i]) return;
    const next = this.successors[this.order]![i]!;
    if (next < 0 || !this.deflated[next] || this.ahead.has(next)) return;
    if (this.ahead.size >= MAX_AHEAD) {
      const [oldest, a] = this.ahead.entries().next().value as [number, Ahead];
      this.ahead.delete(oldest);
      void a.drop().catch(() => {});
    }
    this.ahead.set(next, new Ahead(this.open(next)[Symbol.asyncIterator](), this.limit));
  }
}

/** The member no other member is the successor of (the first of that order). */
function firstOf(next: readonly number[]): number {
  const isNext = new Set(next);
  for (let i = 0; i < next.length; i++) if (!isNext.has(i)) return i;
  return -1;
}

/** Successor arrays of two orders given as lists of indices. */
export function successorsOf(...orders: readonly (readonly number[])[]): number[][] {
  return orders.map((order) => {
    const next = new Array<number>(order.length).fill(-1);
    for (let k = 0; k + 1 < order.length; k++) next[order[k]!] = order[k + 1]!;
    return next;
  });
}
