import type { ByteSource } from '../io/source.ts';

/**
 * Where each local header is expected, from the central directory (ascending), and how long it
 * probably is: 30 bytes + the directory's name length + room for a typical local extra (ZIP64,
 * torch's padding). Two arrays, not an object per member (100,000 in a large .pt).
 */
export interface HeaderPlan {
  readonly at: Float64Array;
  readonly estimate: Float64Array;
}

/**
 * Member data read through to reach the next header rather than paying for one more read (a pread
 * costs ~25 µs, about as much as copying 64 KiB from the page cache; kept lower so that the bytes an
 * open reads stay small: docs/formats/zip.md has the measurements).
 */
export const MAX_GAP = 16 * 1024;
/** One window's size; bounds the memory used to open an archive. */
export const MAX_WINDOW = 1024 * 1024;
/** Local extra bytes guessed beyond the name: torch pads with up to 63 + 4 bytes, CPython adds a 20-byte ZIP64 extra. */
export const EXTRA_GUESS = 128;

/**
 * Positional reads of an archive's local headers and data descriptors, served from one window at
 * a time. A read outside the current window loads a new one starting at it and reaching over the
 * following planned headers (sorted by offset) as long as the bytes between them are few: torch
 * and numpy write members back to back, so 100,000 small members cost a few dozen reads instead of
 * 200,000. What is returned is always exactly `source.read(offset, length)`: the plan only decides
 * how much extra to read, never what is trusted, so a hostile directory can at worst fall back to
 * one read per request.
 */
export class HeaderWindow {
  private buf: Uint8Array = new Uint8Array(0);
  private start = 0;
  private cursor = 0;

  constructor(
    private readonly source: ByteSource,
    private readonly plan: HeaderPlan,
    private readonly limit: number,
  ) {}

  async read(offset: number, length: number): Promise<Uint8Array> {
    const rel = offset - this.start;
    if (rel >= 0 && rel + length <= this.buf.byteLength) return this.buf.subarray(rel, rel + length);
    const end = this.reach(offset, offset + length);
    this.buf = await this.source.read(offset, end - offset);
    this.start = offset;
    return this.buf.subarray(0, length);
  }

  /** How far a window starting at `from` goes: at least to `need`, then over nearby planned headers. */
  private reach(from: number, need: number): number {
    const { at, estimate } = this.plan;
    while (this.cursor < at.length && at[this.cursor]! < from) this.cursor++;
    let end = need;
    for (let j = this.cursor; j < at.length; j++) {
      const e = Math.min(this.limit, at[j]! + estimate[j]!);
      if (at[j]! - end > MAX_GAP || e - from > MAX_WINDOW) break;
      if (e > end) end = e;
    }
    return end;
  }
}
