/** A growable little-endian byte buffer for building the header. */
export class HeaderWriter {
  private buf = new Uint8Array(4096);
  private view = new DataView(this.buf.buffer);
  length = 0;
  private readonly utf8 = new TextEncoder();

  private room(n: number): number {
    if (this.length + n > this.buf.byteLength) {
      let size = this.buf.byteLength * 2;
      while (size < this.length + n) size *= 2;
      const next = new Uint8Array(size);
      next.set(this.buf.subarray(0, this.length));
      this.buf = next;
      this.view = new DataView(next.buffer);
    }
    const at = this.length;
    this.length += n;
    return at;
  }

  u8(v: number): void {
    this.view.setUint8(this.room(1), v);
  }
  i8(v: number): void {
    this.view.setInt8(this.room(1), v);
  }
  u16(v: number): void {
    this.view.setUint16(this.room(2), v, true);
  }
  i16(v: number): void {
    this.view.setInt16(this.room(2), v, true);
  }
  u32(v: number): void {
    this.view.setUint32(this.room(4), v, true);
  }
  i32(v: number): void {
    this.view.setInt32(this.room(4), v, true);
  }
  f32(v: number): void {
    this.view.setFloat32(this.room(4), v, true);
  }
  f64(v: number): void {
    this.view.setFloat64(this.room(8), v, true);
  }
  u64(v: bigint | number): void {
    this.view.setBigUint64(this.room(8), BigInt(v), true);
  }
  i64(v: bigint): void {
    this.view.setBigInt64(this.room(8), v, true);
  }
  bytes(b: Uint8Array): void {
    this.buf.set(b, this.room(b.byteLength));
  }
  /** u64 byte length, then the UTF-8 bytes. */
  string(s: string): void {
    const b = this.utf8.encode(s);
    this.u64(b.byteLength);
    this.bytes(b);
  }
  zeros(n: number): void {
    this.buf.fill(0, this.room(n), this.length);
  }
  result(): Uint8Array {
    return this.buf.slice(0, this.length);
  }
}
