import { giveBack } from './buffer-pool.ts';

/**
 * Small reads walking forward through a file, served from blocks read whole.
 *
 * A checkpoint of 100,000 tiny tensors makes hundreds of thousands of reads of a few bytes each (a
 * ZIP member's local header, a storage's first bytes, each tensor's data), in file order. Each is a
 * pread through libuv's thread pool: ~10 µs of the JS thread and a round trip to the pool (measured:
 * 7.6 s idle of a 15 s .pt convert). Once small reads are seen walking forward, the next one reads a
 * block of BLOCK bytes from its offset and the reads after it that fall inside are copies out of
 * it. A lone small read (a header's length, a seek to a ZIP directory) is read as asked: a block is
 * read only after STREAK reads in a row each started close after the one before.
 */

/** Reads shorter than this may be served from a block; longer ones are tensor chunks. */
export const SMALL_READ = 64 * 1024;
/** 256 KiB: a few blocks per MB of tiny tensors; read in one pread of about the cost of a 4 KiB one. */
const BLOCK = 256 * 1024;
/** A read starting at most this far past the last one's end continues the walk (ZIP local headers, padding). */
const GAP = 4096;
/** Forward reads in a row before blocks are read: a header's length then the header is two. */
const STREAK = 3;
/** Blocks kept, most recent last: two readers walking at once (a tensor written while the next is read). */
const KEPT = 4;

interface Block {
  offset: number;
  length: number;
  data: Promise<Uint8Array>;
}

export class SmallBlocks {
  private blocks: Block[] = [];
  private lastEnd = -1;
  private streak = 0;

  constructor(
    private readonly size: number,
    /** Reads [offset, offset+length) of the file into a buffer of its own. */
    private readonly readRange: (offset: number, length: number) => Promise<Uint8Array>,
  ) {}

  /** The bytes of a small read from a block, or null to read it directly. Call only for length < SMALL_READ. */
  read(offset: number, length: number): Promise<Uint8Array> | null {
    const end = offset + length;
    const forward = offset >= this.lastEnd && offset <= this.lastEnd + GAP;
    this.streak = forward ? this.streak + 1 : 0;
    this.lastEnd = end;
    const hit = this.blocks.find((b) => b.offset <= offset && end <= b.offset + b.length);
    if (hit) return slice(hit, offset, length);
    if (this.streak < STREAK) return null;
    const block: Block = { offset, length: Math.min(BLOCK, this.size - offset), data: this.readRange(offset, Math.min(BLOCK, this.size - offset)) };
    block.data.catch(() => {});
    this.blocks.push(block);
    if (this.blocks.length > KEPT) release(this.blocks.shift()!);
    // A block that could not be read (the file shrank past its end, say) is dropped, and this read is
    // made as asked, so that any error is the one of the bytes asked for.
    return slice(block, offset, length).catch(() => {
      this.blocks = this.blocks.filter((b) => b !== block);
      return this.readRange(offset, length);
    });
  }

  /** Drops the blocks; resolves when reads still in flight have ended (the file may then be closed). */
  async clear(): Promise<void> {
    const pending = this.blocks.map((b) => b.data.catch(() => {}));
    for (const b of this.blocks) release(b);
    this.blocks = [];
    await Promise.all(pending);
  }
}

/**
 * A dropped block's buffer goes back to the pool for the next block: each was garbage until V8's
 * next full collection (37 MB of them for one pass over a 100,000-tensor .pt). Every read served
 * from the block awaited its data before this (reactions run in the order they were made) and has
 * copied its bytes out by the time the buffer is handed on; no read finds a dropped block.
 */
function release(block: Block): void {
  block.data.then(giveBack, () => {});
}

async function slice(block: Block, offset: number, length: number): Promise<Uint8Array> {
  const data = await block.data;
  // A copy the caller owns (it may write it to a sink that keeps it), not a view pinning the block.
  return data.slice(offset - block.offset, offset - block.offset + length);
}
