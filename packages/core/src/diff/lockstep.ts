import { TensorportError } from '../errors.ts';
import { recycleChunk } from '../io/recycle.ts';

/** One side's chunk stream, consumed in pieces of any length. */
class Cursor {
  private cur: Uint8Array = new Uint8Array(0);
  private pos = 0;
  done = false;
  constructor(private readonly it: AsyncIterator<Uint8Array>) {}

  get available(): number {
    return this.cur.byteLength - this.pos;
  }

  /** Makes at least one byte available unless the stream has ended. */
  async fill(): Promise<void> {
    while (this.available === 0 && !this.done) {
      const r = await this.it.next();
      if (r.done) this.done = true;
      else {
        // The pieces yielded from the old chunk were compared before this pull: its buffer may be reused.
        recycleChunk(this.cur);
        this.cur = r.value;
        this.pos = 0;
      }
    }
  }

  /** `n` bytes, a view when they sit in the current chunk, else copied across chunks (n is small then). */
  async take(n: number): Promise<Uint8Array | null> {
    if (this.available >= n) {
      const out = this.cur.subarray(this.pos, this.pos + n);
      this.pos += n;
      return out;
    }
    const out = new Uint8Array(n);
    let got = 0;
    while (got < n) {
      await this.fill();
      if (this.available === 0) return null;
      const k = Math.min(n - got, this.available);
      out.set(this.cur.subarray(this.pos, this.pos + k), got);
      this.pos += k;
      got += k;
    }
    return out;
  }

  async close(): Promise<void> {
    await this.it.return?.();
  }
}

/**
 * Two chunk streams read in lockstep as pairs of pieces holding the same number of elements,
 * `unit`-byte elements on both sides (or `[unitA, unitB]` when the dtypes differ), so the elements
 * line up whatever chunk sizes each side yields. Memory: the two current chunks, plus one element
 * when an element straddles chunks.
 */
export async function* lockstep(a: AsyncIterable<Uint8Array>, b: AsyncIterable<Uint8Array>, unit: number | readonly [number, number], name: string): AsyncGenerator<[Uint8Array, Uint8Array]> {
  const [ua, ub] = typeof unit === 'number' ? [unit, unit] : unit;
  const ca = new Cursor(a[Symbol.asyncIterator]());
  const cb = new Cursor(b[Symbol.asyncIterator]());
  try {
    for (;;) {
      await ca.fill();
      await cb.fill();
      if (ca.available === 0 || cb.available === 0) break;
      const n = Math.max(1, Math.min(Math.floor(ca.available / ua), Math.floor(cb.available / ub)));
      const pa = await ca.take(n * ua);
      const pb = await cb.take(n * ub);
      if (!pa || !pb) break;
      yield [pa, pb];
    }
    if (ca.available !== 0 || cb.available !== 0 || !ca.done || !cb.done) {
      throw new TensorportError('TensorByteLengthMismatch', `tensor ${JSON.stringify(name)}: the two sides streamed different byte counts`, { tensor: name });
    }
  } finally {
    await Promise.all([ca.close(), cb.close()]);
  }
}
