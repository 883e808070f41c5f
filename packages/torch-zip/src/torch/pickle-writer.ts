/**
 * Emits the protocol-2 pickle `torch.save` writes for a state dict, using only opcodes that torch's
 * `weights_only` unpickler accepts in 1.13 and 2.x (no BINFLOAT, no memo, no protocol-4 framing).
 */
export class PickleWriter {
  private readonly parts: Uint8Array[] = [];
  private size = 0;
  private readonly enc = new TextEncoder();

  private bytes(b: Uint8Array | number[]): this {
    const u = b instanceof Uint8Array ? b : Uint8Array.from(b);
    this.parts.push(u);
    this.size += u.byteLength;
    return this;
  }

  op(...codes: number[]): this {
    return this.bytes(codes);
  }

  proto(): this {
    return this.op(0x80, 2);
  }

  /** GLOBAL 'module name' */
  global(module: string, name: string): this {
    return this.bytes(this.enc.encode(`c${module}\n${name}\n`));
  }

  /** BINUNICODE: a 4-byte length, then UTF-8. */
  str(s: string): this {
    const b = this.enc.encode(s);
    const h = new Uint8Array(5);
    h[0] = 0x58;
    new DataView(h.buffer).setUint32(1, b.byteLength, true);
    return this.bytes(h).bytes(b);
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
    const out = new Uint8Array(this.size);
    let p = 0;
    for (const part of this.parts) {
      out.set(part, p);
      p += part.byteLength;
    }
    return out;
  }
}
