import { TensorportError, type ErrorCode } from '../errors.ts';

/**
 * A strict JSON reader that accepts exactly what serde_json (the safetensors reference's parser)
 * accepts: RFC 8259 grammar, whitespace limited to space/\t/\n/\r, no lone surrogate escapes, no raw
 * control characters in strings, at most 127 nested arrays/objects, and no number whose f64 value
 * overflows (serde_json's "number out of range", computed with its own fast algorithm below).
 *
 * Integers stay exact: a number token is a `usize` (u64) only when it is written as a plain
 * non-negative integer ≤ u64::MAX; `2.0`, `1e1`, `-0`, `-1` and `18446744073709551616` are not.
 *
 * Offsets are UTF-8 byte offsets into the text that was decoded (plus `baseOffset`), so errors can
 * point into the file. Two interfaces over the same scanner: `JsonCursor` (pull parsing, used by the
 * header decoder so that ignored values are validated but never materialized) and `parseJson` (a
 * tree with objects as ordered entry lists, for small documents and tests).
 */

export type JsonValue = JsonNull | JsonBool | JsonNumber | JsonString | JsonArray | JsonObject;
export interface JsonNull { kind: 'null'; offset: number }
export interface JsonBool { kind: 'bool'; value: boolean; offset: number }
export interface JsonString { kind: 'string'; value: string; offset: number }
export interface JsonArray { kind: 'array'; items: JsonValue[]; offset: number }
export interface JsonEntry { key: string; keyOffset: number; value: JsonValue }
/** Entries in document order; duplicate keys are kept (the consumer decides what they mean). */
export interface JsonObject { kind: 'object'; entries: JsonEntry[]; offset: number }
export interface JsonNumber {
  kind: 'number';
  /** The token as written. */
  text: string;
  /** Exact value when the token is a u64 (a plain non-negative integer ≤ u64::MAX), else null. */
  value: bigint | null;
  offset: number;
}

export type JsonKind = 'object' | 'array' | 'string' | 'number' | 'true' | 'false' | 'null' | 'eof' | 'invalid';

/** A number token read by the cursor; `usize` is a plain number when ≤ 15 digits (exact). */
export interface NumberToken {
  text: string;
  offset: number;
  /** Exact u64 value, or null for negatives, fractions, exponents and values above u64::MAX. */
  usize: number | bigint | null;
  /** What serde_json would have parsed it as (for messages). */
  serdeType: 'u64' | 'i64' | 'f64';
}

export interface JsonOptions {
  /** Added to every reported offset (e.g. 8 for a safetensors header). */
  baseOffset?: number;
  /** Maximum nesting of arrays/objects; serde_json's `remaining_depth = 128` allows 127. */
  maxDepth?: number;
  /** The ErrorCode thrown for syntax errors. */
  code?: ErrorCode;
  /**
   * The UTF-8 bytes the text was decoded from. A string read without escapes is then decoded
   * from them afresh: V8 makes a slice of 13 characters or more a view that keeps the whole text
   * alive, and a 100,000-tensor header's names would hold its 9.4 MB text for as long as they live.
   */
  utf8?: Uint8Array;
}

/** Below this length V8 copies a slice anyway (SlicedString::kMinLength). */
const SLICE_MIN = 13;
// ignoreBOM: a string may begin with U+FEFF, which the default decoder would drop.
const utf8Decoder = new TextDecoder('utf-8', { ignoreBOM: true });

/** serde_json decrements its depth budget of 128 before checking for zero: 127 levels pass. */
export const SERDE_MAX_DEPTH = 127;

export const U64_MAX = 0xffff_ffff_ffff_ffffn;
const I32_MAX = 2147483647;
const I32_MIN = -2147483648;

/** serde_json's POW10 table: the correctly rounded literals 1e0..1e308. */
const POW10: readonly number[] = Array.from({ length: 309 }, (_, i) => Number(`1e${i}`));

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

function isWs(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}
function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}
function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  return -1;
}

export interface CursorMark { i: number; b: number; depth: number }

export class JsonCursor {
  private i = 0;
  /** UTF-8 byte offset of `i` (relative to the text start). */
  private b = 0;
  private depth = 0;
  private readonly base: number;
  private readonly maxDepth: number;
  private readonly code: ErrorCode;
  /** Byte offset of the most recent key returned by `nextKey`. */
  lastKeyOffset = 0;

  private readonly utf8: Uint8Array | undefined;

  constructor(private readonly s: string, options: JsonOptions = {}) {
    this.utf8 = options.utf8;
    this.base = options.baseOffset ?? 0;
    this.maxDepth = options.maxDepth ?? SERDE_MAX_DEPTH;
    this.code = options.code ?? 'InvalidHeaderJson';
  }

  /** Current byte offset (including `baseOffset`). */
  get offset(): number {
    return this.base + this.b;
  }

  mark(): CursorMark {
    return { i: this.i, b: this.b, depth: this.depth };
  }
  reset(m: CursorMark): void {
    this.i = m.i;
    this.b = m.b;
    this.depth = m.depth;
  }

  fail(message: string, byteOffset = this.b): never {
    throw new TensorportError(this.code, `invalid JSON at byte ${this.base + byteOffset}: ${message}`, { offset: this.base + byteOffset });
  }

  /** Skips JSON whitespace; returns how many characters were skipped. */
  skipWs(): number {
    const start = this.i;
    while (this.i < this.s.length && isWs(this.s.charCodeAt(this.i))) this.i++;
    this.b += this.i - start;
    return this.i - start;
  }

  /** The kind of the next value (after whitespace), without consuming it. */
  peekKind(): JsonKind {
    this.skipWs();
    if (this.i >= this.s.length) return 'eof';
    switch (this.s.charCodeAt(this.i)) {
      case 0x7b: return 'object';
      case 0x5b: return 'array';
      case QUOTE: return 'string';
      case 0x74: return 'true';
      case 0x66: return 'false';
      case 0x6e: return 'null';
      default: {
        const c = this.s.charCodeAt(this.i);
        return c === 0x2d || isDigit(c) ? 'number' : 'invalid';
      }
    }
  }

  private expectValueStart(): JsonKind {
    const k = this.peekKind();
    if (k === 'eof') this.fail('EOF while parsing a value');
    if (k === 'invalid') this.fail('expected value');
    return k;
  }

  /** After the last value: only whitespace may follow. */
  end(): void {
    this.skipWs();
    if (this.i < this.s.length) this.fail('trailing characters');
  }

  // ---- containers ----

  private enter(): void {
    this.depth++;
    if (this.depth > this.maxDepth) this.fail(`recursion limit exceeded (more than ${this.maxDepth} nested arrays/objects)`);
    this.i++;
    this.b++;
  }

  /** Consumes `{`. Then call `nextKey` until it returns null (which consumes `}`). */
  enterObject(): void {
    if (this.peekKind() !== 'object') this.fail('expected `{`');
    this.enter();
    this.firstInContainer = true;
  }

  /** Consumes `[`. Then call `nextItem` until it returns false (which consumes `]`). */
  enterArray(): void {
    if (this.peekKind() !== 'array') this.fail('expected `[`');
    this.enter();
    this.firstInContainer = true;
  }

  /** Reads `,"key":` (or `}` → null). The cursor is then at the value. */
  nextKey(): string | null {
    if (!this.separator(0x7d, 'an object')) return null;
    if (this.s.charCodeAt(this.i) !== QUOTE) this.fail('key must be a string');
    this.lastKeyOffset = this.base + this.b;
    const key = this.readString();
    this.skipWs();
    if (this.i >= this.s.length) this.fail('EOF while parsing an object');
    if (this.s.charCodeAt(this.i) !== 0x3a) this.fail('expected `:`');
    this.i++;
    this.b++;
    return key;
  }

  /** Reads `,` before the next item (true) or `]` (false). */
  nextItem(): boolean {
    return this.separator(0x5d, 'a list');
  }

  /**
   * Between container members: `close` ends the container (false), otherwise a comma is required
   * except before the first member. Leaves the cursor at the next member (true).
   */
  private separator(close: number, what: string): boolean {
    this.skipWs();
    if (this.i >= this.s.length) this.fail(`EOF while parsing ${what}`);
    let c = this.s.charCodeAt(this.i);
    const first = this.firstInContainer;
    this.firstInContainer = false;
    if (c === close) {
      this.i++;
      this.b++;
      this.depth--;
      return false;
    }
    if (!first) {
      if (c !== 0x2c) this.fail(`expected \`,\` or \`${String.fromCharCode(close)}\``);
      this.i++;
      this.b++;
      this.skipWs();
      if (this.i >= this.s.length) this.fail(`EOF while parsing ${what}`);
      c = this.s.charCodeAt(this.i);
      if (c === close) this.fail('trailing comma');
    }
    return true;
  }

  private firstInContainer = false;

  // ---- scalars ----

  readLiteral(): boolean | null {
    const k = this.expectValueStart();
    const word = k === 'true' ? 'true' : k === 'false' ? 'false' : k === 'null' ? 'null' : this.fail('expected a literal');
    for (let j = 0; j < word.length; j++) {
      if (this.i >= this.s.length) this.fail('EOF while parsing a value');
      if (this.s.charCodeAt(this.i) !== word.charCodeAt(j)) this.fail('expected ident');
      this.i++;
      this.b++;
    }
    return k === 'null' ? null : k === 'true';
  }

  /** Reads a string at the cursor (which must be at `"`). */
  readString(): string {
    if (this.peekKind() !== 'string') this.fail('expected a string');
    const s = this.s;
    const len = s.length;
    let i = this.i + 1;
    let b = this.b + 1;
    let out = '';
    let run = i;
    for (;;) {
      if (i >= len) {
        this.i = i;
        this.b = b;
        this.fail('EOF while parsing a string');
      }
      const c = s.charCodeAt(i);
      if (c === QUOTE) {
        const whole = run === this.i + 1 && this.utf8 !== undefined && i - run >= SLICE_MIN;
        out = whole ? utf8Decoder.decode(this.utf8!.subarray(this.b + 1, b)) : out + s.slice(run, i);
        this.i = i + 1;
        this.b = b + 1;
        return out;
      }
      if (c === BACKSLASH) {
        out += s.slice(run, i);
        this.i = i;
        this.b = b;
        out += this.readEscape();
        i = this.i;
        b = this.b;
        run = i;
        continue;
      }
      if (c < 0x20) {
        this.b = b;
        this.fail('control character (\\u0000-\\u001F) found while parsing a string');
      }
      if (c < 0x80) {
        b += 1;
      } else if (c < 0x800) {
        b += 2;
      } else if (c >= 0xd800 && c <= 0xdfff) {
        // Raw surrogates only arrive paired from a UTF-8 decode; a lone one means the caller did not
        // give us decoded UTF-8.
        const d = s.charCodeAt(i + 1);
        if (c > 0xdbff || !(d >= 0xdc00 && d <= 0xdfff)) {
          this.b = b;
          this.fail('lone surrogate in string');
        }
        b += 4;
        i++;
      } else {
        b += 3;
      }
      i++;
    }
  }

  /** At a backslash: returns the decoded character(s). */
  private readEscape(): string {
    const s = this.s;
    const at = this.b;
    if (this.i + 1 >= s.length) this.fail('EOF while parsing a string');
    const e = s.charCodeAt(this.i + 1);
    this.i += 2;
    this.b += 2;
    switch (e) {
      case 0x22: return '"';
      case 0x5c: return '\\';
      case 0x2f: return '/';
      case 0x62: return '\b';
      case 0x66: return '\f';
      case 0x6e: return '\n';
      case 0x72: return '\r';
      case 0x74: return '\t';
      case 0x75: {
        const hi = this.readHex4(at);
        if (hi >= 0xdc00 && hi <= 0xdfff) this.fail('lone surrogate in hex escape', at);
        if (hi < 0xd800 || hi > 0xdbff) return String.fromCharCode(hi);
        if (s.charCodeAt(this.i) !== BACKSLASH || s.charCodeAt(this.i + 1) !== 0x75) this.fail('unexpected end of hex escape (lone leading surrogate)', at);
        const at2 = this.b;
        this.i += 2;
        this.b += 2;
        const lo = this.readHex4(at2);
        if (lo < 0xdc00 || lo > 0xdfff) this.fail('lone leading surrogate in hex escape', at);
        return String.fromCharCode(hi, lo);
      }
      default:
        this.fail('invalid escape', at);
    }
  }

  private readHex4(at: number): number {
    let v = 0;
    for (let k = 0; k < 4; k++) {
      if (this.i >= this.s.length) this.fail('EOF while parsing a string');
      const h = hexValue(this.s.charCodeAt(this.i));
      if (h < 0) this.fail('invalid escape', at);
      v = v * 16 + h;
      this.i++;
      this.b++;
    }
    return v;
  }

  /** Reads a number token with serde_json's grammar and range rule. */
  readNumber(): NumberToken {
    if (this.peekKind() !== 'number') this.fail('expected a number');
    const s = this.s;
    const start = this.i;
    const startB = this.b;
    let j = start;
    const negative = s.charCodeAt(j) === 0x2d;
    if (negative) j++;
    const intStart = j;
    if (j >= s.length) this.failNumber(start, startB, j, 'EOF while parsing a value');
    const first = s.charCodeAt(j);
    if (first === 0x30) {
      j++;
      if (isDigit(s.charCodeAt(j))) this.failNumber(start, startB, j, 'invalid number');
    } else if (isDigit(first)) {
      while (isDigit(s.charCodeAt(j))) j++;
    } else {
      this.failNumber(start, startB, j, 'invalid number');
    }
    const intEnd = j;
    let fracStart = -1;
    let fracEnd = -1;
    if (s.charCodeAt(j) === 0x2e) {
      j++;
      fracStart = j;
      while (isDigit(s.charCodeAt(j))) j++;
      fracEnd = j;
      if (fracEnd === fracStart) this.failNumber(start, startB, j, j >= s.length ? 'EOF while parsing a value' : 'invalid number');
    }
    let expPositive = true;
    let expStart = -1;
    let expEnd = -1;
    const ec = s.charCodeAt(j);
    if (ec === 0x65 || ec === 0x45) {
      j++;
      const sign = s.charCodeAt(j);
      if (sign === 0x2b) j++;
      else if (sign === 0x2d) {
        expPositive = false;
        j++;
      }
      expStart = j;
      while (isDigit(s.charCodeAt(j))) j++;
      expEnd = j;
      if (expEnd === expStart) this.failNumber(start, startB, j, j >= s.length ? 'EOF while parsing a value' : 'invalid number');
    }
    const text = s.slice(start, j);
    const offset = this.base + startB;
    this.i = j;
    this.b = startB + (j - start);

    const intDigits = intEnd - intStart;
    if (fracStart < 0 && expStart < 0 && intDigits <= 20) {
      if (intDigits <= 15) {
        const v = Number(negative ? s.slice(intStart, intEnd) : text);
        return negative ? { text, offset, usize: null, serdeType: v === 0 ? 'f64' : 'i64' } : { text, offset, usize: v, serdeType: 'u64' };
      }
      const v = BigInt(s.slice(intStart, intEnd));
      if (v <= U64_MAX) {
        // serde_json: `-N` is an i64 when it fits, otherwise `-(N as f64)` (finite either way).
        return negative ? { text, offset, usize: null, serdeType: v <= 0x8000_0000_0000_0000n ? 'i64' : 'f64' } : { text, offset, usize: v, serdeType: 'u64' };
      }
    }
    if (!serdeF64InRange(s, intStart, intEnd, fracStart, fracEnd, expPositive, expStart, expEnd)) {
      this.b = startB + (j - start);
      this.fail('number out of range', startB);
    }
    return { text, offset, usize: null, serdeType: 'f64' };
  }

  private failNumber(start: number, startB: number, j: number, msg: string): never {
    this.i = j;
    this.b = startB + (j - start);
    return this.fail(msg);
  }

  /** Validates and skips one value of any kind, iteratively (depth still limited). */
  skipValue(): void {
    const stack: boolean[] = []; // true: inside an object
    for (;;) {
      const k = this.expectValueStart();
      if (k === 'object' || k === 'array') {
        if (k === 'object') this.enterObject();
        else this.enterArray();
        stack.push(k === 'object');
      } else if (k === 'string') {
        this.readString();
      } else if (k === 'number') {
        this.readNumber();
      } else {
        this.readLiteral();
      }
      // close finished containers, then position at the next value
      for (;;) {
        const top = stack.length === 0 ? undefined : stack[stack.length - 1];
        if (top === undefined) return;
        const more = top ? this.nextKey() !== null : this.nextItem();
        if (more) break;
        stack.pop();
      }
    }
  }

  /** Materializes one value (recursion bounded by maxDepth). */
  readValue(): JsonValue {
    const k = this.expectValueStart();
    const offset = this.offset;
    switch (k) {
      case 'object': {
        this.enterObject();
        const entries: JsonEntry[] = [];
        for (let key = this.nextKey(); key !== null; key = this.nextKey()) {
          const keyOffset = this.lastKeyOffset;
          entries.push({ key, keyOffset, value: this.readValue() });
        }
        return { kind: 'object', entries, offset };
      }
      case 'array': {
        this.enterArray();
        const items: JsonValue[] = [];
        while (this.nextItem()) items.push(this.readValue());
        return { kind: 'array', items, offset };
      }
      case 'string':
        return { kind: 'string', value: this.readString(), offset };
      case 'number': {
        const t = this.readNumber();
        return { kind: 'number', text: t.text, value: t.usize === null ? null : BigInt(t.usize), offset };
      }
      case 'null':
        this.readLiteral();
        return { kind: 'null', offset };
      default:
        return { kind: 'bool', value: this.readLiteral() === true, offset };
    }
  }
}

/** Parses a whole document: one value surrounded by JSON whitespace. */
export function parseJson(text: string, options: JsonOptions = {}): JsonValue {
  const c = new JsonCursor(text, options);
  const v = c.readValue();
  c.end();
  return v;
}

/**
 * serde_json (without `float_roundtrip`) turns a non-integer token into an f64 by keeping at most a
 * u64 of significant digits (further digits are dropped, or counted into the exponent when they are
 * integer digits), then multiplying or dividing by POW10. A product that becomes infinite is an
 * error ("number out of range"). Replicated step by step so `1.7976931348623158e308` is refused just
 * like the reference refuses it.
 */
function serdeF64InRange(
  s: string, intStart: number, intEnd: number, fracStart: number, fracEnd: number,
  expPositive: boolean, expStart: number, expEnd: number,
): boolean {
  const intDigits = intEnd - intStart;
  const fracDigits = fracStart < 0 ? 0 : fracEnd - fracStart;
  let f: number;
  let exponent: number;
  let zero: boolean;
  if (intDigits + fracDigits <= 15) {
    // No u64 overflow possible: the significand is exact as a double.
    const sig = Number(s.slice(intStart, intEnd) + (fracStart < 0 ? '' : s.slice(fracStart, fracEnd)));
    f = sig;
    zero = sig === 0;
    exponent = -fracDigits;
  } else {
    let sig = 0n;
    let k = intStart;
    for (; k < intEnd; k++) {
      const next = sig * 10n + BigInt(s.charCodeAt(k) - 0x30);
      if (next > U64_MAX) break;
      sig = next;
    }
    exponent = intEnd - k; // integer digits that did not fit are counted, not kept
    if (fracStart >= 0) {
      for (let q = fracStart; q < fracEnd; q++) {
        const next = sig * 10n + BigInt(s.charCodeAt(q) - 0x30);
        if (next > U64_MAX) break; // further fraction digits are ignored
        sig = next;
        exponent -= 1;
      }
    }
    f = Number(sig);
    zero = sig === 0n;
  }
  if (expStart >= 0) {
    let e = s.charCodeAt(expStart) - 0x30;
    for (let q = expStart + 1; q < expEnd; q++) {
      const d = s.charCodeAt(q) - 0x30;
      if (e > (I32_MAX - d) / 10) {
        // Exponent overflows i32: an error for a positive exponent of a non-zero number, else 0.0.
        return zero || !expPositive;
      }
      e = e * 10 + d;
    }
    exponent = expPositive ? exponent + e : exponent - e;
    exponent = Math.min(I32_MAX, Math.max(I32_MIN, exponent));
  }
  for (;;) {
    const a = Math.abs(exponent);
    const pow = a <= 308 ? POW10[a] : undefined;
    if (pow !== undefined) {
      if (exponent >= 0) return Number.isFinite(f * pow);
      return true;
    }
    if (f === 0) return true;
    if (exponent >= 0) return false;
    f /= 1e308;
    exponent += 308;
  }
}

/** A short name for a value's type, in serde's words ("sequence", "map", …). */
export function describeKind(k: JsonKind): string {
  switch (k) {
    case 'object': return 'map';
    case 'array': return 'sequence';
    case 'string': return 'string';
    case 'number': return 'number';
    case 'true':
    case 'false': return 'boolean';
    case 'null': return 'null';
    default: return k;
  }
}
