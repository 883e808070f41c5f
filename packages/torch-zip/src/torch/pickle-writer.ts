/**
 * Emits the protocol-2 pickle `torch.save` writes for a state dict, using only opcodes that torch's
 * `weights_only` unpickler accepts in 1.13 and 2.x (no BINFLOAT, no memo, no protocol-4 framing).
 */
export class PickleWriter {
  // One growing buffer: a state dict of 100k tensors is ~30 opcodes each, and an array of that many
  // small Uint8Arrays cost ~15 KB per tensor in object headers and GC time (docs/benchmarks.md).
  private buf = new Uint8Array(4096);
  private size = 0;
  private readonly enc = new TextEncoder();
  /** GLOBAL lines are the same few strings again and again. */
  private readonly globals = new Map<string, Uint8Array>();

  private reserve(n: number): void {
    if (this.size + n <= this.buf.byteLength) return;
    let cap = this.buf.byteLength * 2;
    while (cap < this.size + n) cap *= 2;
    const next = new Uint8Array(cap);
    next.set(this.buf.subarray(0, this.size));
    this.buf = next;
  }

  private bytes(b: Uint8Array): this {
    this.reserve(b.byteLength);
    this.buf.set(b, this.size);
    this.size += b.byteLength;
    return this;
  }

  private byte(...codes: number[]): this {
    this.reserve(codes.length);
    for (const c of codes) this.buf[this.size++] = c;
    return this;
  }

  op(...codes: number[]): this {
    return this.byte(...codes);
  }

  proto(): this {
    return this.op(0x80, 2);
  }

  /** GLOBAL 'module name' */
  global(module: string, name: string): this {
    const key = `c${module}\n${name}\n`;
    let b = this.globals.get(key);
    if (b === undefined) {
      b = this.enc.encode(key);
      this.globals.set(key, b);
    }
    return this.bytes(b);
  }

  /** BINUNICODE: a 4-byte length, then UTF-8. */
  str(s: string): this {
    // UTF-8 needs at most 3 bytes per UTF-16 code unit: encode in place after the 5-byte header.
    this.reserve(5 + 3 * s.length);
    const { written } = this.enc.encodeInto(s, this.buf.subarray(this.size + 5));
    const at = this.size;
    this.buf[at] = 0x58;
    this.buf[at + 1] = written & 0xff;
    this.buf[at + 2] = (written >>> 8) & 0xff;
    this.buf[at + 3] = (written >>> 16) & 0xff;
    this.buf[at + 4] = (written >>> 24) & 0xff;
    this.size += 5 + written;
    return this;
  }

  /** The smallest int opcode CPython would use for a non-negative integer. */
  int(n: number): this {
    if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`cannot pickle ${n}`);
    if (n < 0x100) return this.op(0x4b, n);
    if (n < 0x10000) return this.op(0x4d, n & 0xff, n >> 8);
    if (n < 0x80000000) return this.op(0x4a, n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, (n >>> 24) & 0xff);
    const out: number[] = [];
    let v = BigInt(n);
    while (v > 0n) {
      out.push(Number(v & 0xffn));
      v >>= 8n;
    }
    if (out[out.length - 1]! & 0x80) out.push(0); // keep the sign bit clear: LONG1 is two's complement
    return this.op(0x8a, out.length, ...out);
  }

  /** A tuple of non-negative ints: EMPTY_TUPLE, TUPLE1-3, or MARK … TUPLE. */
  intTuple(xs: readonly number[]): this {
    if (xs.length === 0) return this.op(0x29);
    if (xs.length > 3) this.op(0x28);
    for (const x of xs) this.int(x);
    return this.op(xs.length > 3 ? 0x74 : 0x84 + xs.length);
  }

  mark(): this { return this.op(0x28); }
  tuple(): this { return this.op(0x74); }
  reduce(): this { return this.op(0x52); }
  binpersid(): this { return this.op(0x51); }
  newFalse(): this { return this.op(0x89); }
  emptyTuple(): this { return this.op(0x29); }
  setitems(): this { return this.op(0x75); }
  stop(): this { return this.op(0x2e); }

  finish(): Uint8Array {
    return this.buf.slice(0, this.size);
  }
}
