/**
 * Reads a tensor's bytes a block of rows at a time from its `chunks()` stream, however the source
 * cuts them, so a layer is processed in bounded memory: one block of each input at a time.
 */
import { TensorportError, type TensorDescriptor } from '@tensorport/core';

/** Work per block: about this many bytes of f32 values. */
export const BLOCK_BYTES = 4 * 1024 * 1024;

export function rowsPerBlock(rows: number, cols: number): number {
  return Math.max(1, Math.min(rows, Math.floor(BLOCK_BYTES / (cols * 4))));
}

export class RowReader {
  private readonly it: AsyncIterator<Uint8Array>;
  private pending: Uint8Array = new Uint8Array(0);
  private consumed = 0;

  constructor(
    private readonly desc: TensorDescriptor,
    private readonly rowBytes: number,
    rows: number,
  ) {
    if (desc.byteLength !== rowBytes * rows) {
      throw new TensorportError('TensorByteLengthMismatch', `${desc.name} holds ${desc.byteLength} bytes, expected ${rows} rows of ${rowBytes}`, { tensor: desc.name });
    }
    this.it = desc.chunks(Math.max(rowBytes, 1 << 20))[Symbol.asyncIterator]();
  }

  /** Exactly `rows` rows; throws if the tensor's stream ends early. */
  async read(rows: number): Promise<Uint8Array> {
    const need = rows * this.rowBytes;
    if (this.pending.byteLength >= need) return this.take(need);
    const out = new Uint8Array(need);
    let filled = 0;
    while (filled < need) {
      if (this.pending.byteLength === 0) {
        const next = await this.it.next();
        if (next.done) {
          throw new TensorportError('TensorByteLengthMismatch', `${this.desc.name} ended after ${this.consumed + filled} of ${this.desc.byteLength} bytes`, { tensor: this.desc.name });
        }
        this.pending = next.value;
        continue;
      }
      const n = Math.min(need - filled, this.pending.byteLength);
      out.set(this.pending.subarray(0, n), filled);
      this.pending = this.pending.subarray(n);
      filled += n;
    }
    this.consumed += need;
    return out;
  }

  private take(n: number): Uint8Array {
    const out = this.pending.subarray(0, n);
    this.pending = this.pending.subarray(n);
    this.consumed += n;
    return out;
  }

  async close(): Promise<void> {
    await this.it.return?.();
  }
}

/** A descriptor whose bytes are produced block by block. */
export function computedDescriptor(
  name: string,
  dtype: TensorDescriptor['dtype'],
  shape: readonly number[],
  byteLength: number,
  produce: () => AsyncGenerator<Uint8Array>,
): TensorDescriptor {
  return {
    name,
    dtype,
    shape: [...shape],
    byteLength,
    chunks: () => produce(),
  };
}

/** Runs `each` over row blocks of several tensors read in lockstep, closing every reader at the end. */
export async function* lockstep(
  name: string,
  inputs: ReadonlyArray<{ desc: TensorDescriptor; rowBytes: number }>,
  rows: number,
  block: number,
  each: (blocks: Uint8Array[], row: number, count: number) => Uint8Array,
): AsyncGenerator<Uint8Array> {
  const readers = inputs.map((i) => new RowReader(i.desc, i.rowBytes, rows));
  try {
    for (let r = 0; r < rows; r += block) {
      const n = Math.min(block, rows - r);
      const blocks: Uint8Array[] = [];
      for (const reader of readers) blocks.push(await reader.read(n));
      let out: Uint8Array;
      try {
        out = each(blocks, r, n);
      } catch (e) {
        // Kernel errors know elements, not tensors: name the output and the rows.
        if (e instanceof TensorportError && e.tensor === undefined) {
          throw new TensorportError(e.code, `${name}, rows ${r}..${r + n - 1}: ${e.message}`, { tensor: name, cause: e });
        }
        throw e;
      }
      yield out;
    }
  } finally {
    for (const reader of readers) await reader.close();
  }
}

/**
 * f32 working space for values that do not outlive their block (the decoded weights of a
 * quantize, the values of a dequantize before they are encoded): one buffer reused block after
 * block, as a fresh 4 MiB array per block cost about as much as decoding into it (zero-filled
 * pages, faulted in one by one). Returns a view of exactly `n` elements.
 */
export function blockScratch(): (n: number) => Float32Array {
  let buf = new Float32Array(0);
  return (n) => {
    if (buf.length < n) buf = new Float32Array(n);
    return buf.subarray(0, n);
  };
}
