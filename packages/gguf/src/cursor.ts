import { TensorportError, type ByteSource } from '@tensorport/core';

/** Header bytes are fetched in pages of this size (or one larger read for a long value). */
export const HEADER_PAGE = 256 * 1024;

/**
 * Sequential little-endian reads over a ByteSource, fetching one page at a time: only the bytes of
 * the header are ever read. Every read is checked against the file size first, so a declared
 * length never allocates more than the file holds.
 */
export class HeaderCursor {
  pos = 0;
  private buf: Uint8Array = new Uint8Array(0);
  private view = new DataView(this.buf.buffer);
  private bufStart = 0;

  constructor(
    readonly source: ByteSource,
    private readonly page = HEADER_PAGE,
  ) {}

  get remaining(): number {
    return this.source.size - this.pos;
  }

  /** Makes [pos, pos+n) readable; `what` names the field in the error when the file ends first. */
  async need(n: number, what: string): Promise<void> {
    if (n > this.remaining) {
      throw new TensorportError('GgufTruncated', `${this.source.name}: the file ends inside ${what} (needs ${n} bytes at offset ${this.pos}, ${this.remaining} left)`, { offset: this.pos, path: this.source.name });
    }
    if (this.pos >= this.bufStart && this.pos + n <= this.bufStart + this.buf.byteLength) return;
    const length = Math.min(Math.max(n, this.page), this.remaining);
    const bytes = await this.source.read(this.pos, length);
    // Own copy: DataView needs a plain buffer and the source may hand out views of a larger one.
    this.buf = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice();
    this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
    this.bufStart = this.pos;
  }

  /** True when [pos, pos+n) is already in the current page (so reads need no await). */
  has(n: number): boolean {
    return this.pos >= this.bufStart && this.pos + n <= this.bufStart + this.buf.byteLength;
  }

  private at(n: number): number {
    const o = this.pos - this.bufStart;
    this.pos += n;
    return o;
  }

  u8(): number {
    return this.view.getUint8(this.at(1));
  }
  i8(): number {
    return this.view.getInt8(this.at(1));
  }
  u16(): number {
    return this.view.getUint16(this.at(2), true);
  }
  i16(): number {
    return this.view.getInt16(this.at(2), true);
  }
  u32(): number {
    return this.view.getUint32(this.at(4), true);
  }
  i32(): number {
    return this.view.getInt32(this.at(4), true);
  }
  f32(): number {
    return this.view.getFloat32(this.at(4), true);
  }
  f64(): number {
    return this.view.getFloat64(this.at(8), true);
  }
  u64(): bigint {
    return this.view.getBigUint64(this.at(8), true);
  }
  i64(): bigint {
    return this.view.getBigInt64(this.at(8), true);
  }
  /** `n` bytes (after `need(n)`), as a view into the current page. */
  bytes(n: number): Uint8Array {
    const o = this.at(n);
    return this.buf.subarray(o, o + n);
  }
}
