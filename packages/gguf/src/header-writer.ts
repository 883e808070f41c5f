/**
 * A growable little-endian byte buffer for building the header. Each write reserves its bytes
 * first: `room` may replace the buffer and its view.
 */
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
    const at = this.room(1);
    this.view.setUint8(at, v);
  }
  i8(v: number): void {
    const at = this.room(1);
    this.view.setInt8(at, v);
  }
  u16(v: number): void {
    const at = this.room(2);
    this.view.setUint16(at, v, true);
  }
  i16(v: number): void {
    const at = this.room(2);
    this.view.setInt16(at, v, true);
  }
  u32(v: number): void {
    const at = this.room(4);
    this.view.setUint32(at, v, true);
  }
  i32(v: number): void {
    const at = this.room(4);
    this.view.setInt32(at, v, true);
  }
  f32(v: number): void {
    const at = this.room(4);
    this.view.setFloat32(at, v, true);
  }
  f64(v: number): void {
    const at = this.room(8);
    this.view.setFloat64(at, v, true);
  }
  u64(v: bigint | number): void {
    const at = this.room(8);
    this.view.setBigUint64(at, BigInt(v), true);
  }
  i64(v: bigint): void {
    const at = this.room(8);
    this.view.setBigInt64(at, v, true);
  }
  bytes(b: Uint8Array): void {
    const at = this.room(b.byteLength);
    this.buf.set(b, at);
  }
  /** u64 byte length, then the UTF-8 bytes. */
  string(s: string): void {
    if (isAscii(s)) {
      // Most tokens: one byte per code unit, no TextEncoder call (its per-call cost dominates).
      this.u64(s.length);
      const at = this.room(s.length);
      for (let i = 0; i < s.length; i++) this.buf[at + i] = s.charCodeAt(i);
      return;
    }
    const b = this.utf8.encode(s);
    this.u64(b.byteLength);
    this.bytes(b);
  }
  zeros(n: number): void {
    const at = this.room(n);
    this.buf.fill(0, at, this.length);
  }
  result(): Uint8Array {
    return this.buf.slice(0, this.length);
  }
}

/** True for short strings of ASCII only (longer ones go through TextEncoder, which is fast on them). */
export function isAscii(s: string): boolean {
  if (s.length > 64) return false;
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) return false;
  return true;
}
