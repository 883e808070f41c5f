import { TensorportError } from '@tensorport/core';

/**
 * The Python literal syntax of .npy headers (`repr` of a dict), parsed without eval: strings with
 * their escapes, ints (Python 2 `L` suffix allowed, as numpy's `_filter_header` allows), True,
 * False, None, tuples, lists and dicts. Bounded by the input (already capped by the caller) and a
 * nesting depth, so hostile headers cannot recurse the parser off the stack.
 */
export class PyTuple {
  constructor(readonly items: PyValue[]) {}
}
export type PyValue = string | bigint | boolean | null | PyTuple | PyValue[] | Map<string, PyValue>;

const MAX_DEPTH = 32;
const MAX_INT_DIGITS = 40;

export function parsePyLiteral(text: string, offset = 0): PyValue {
  const p = new Parser(text, offset);
  const v = p.value(0);
  p.ws();
  if (p.i !== text.length) p.fail('unexpected text after the header dict');
  return v;
}

class Parser {
  i = 0;
  constructor(
    readonly s: string,
    readonly base: number,
  ) {}

  fail(why: string): never {
    throw new TensorportError('NpyInvalidHeader', `npy header: ${why} at character ${this.i}`, { offset: this.base + this.i });
  }

  ws(): void {
    while (this.i < this.s.length && ' \t\n\r\f\v'.includes(this.s[this.i]!)) this.i++;
  }

  value(depth: number): PyValue {
    if (depth > MAX_DEPTH) this.fail(`literal nested deeper than ${MAX_DEPTH}`);
    this.ws();
    const c = this.s[this.i];
    if (c === undefined) this.fail('header ends inside a literal');
    if (c === "'" || c === '"') return this.string();
    if (c === '(') return this.sequence(')', depth);
    if (c === '[') return this.sequence(']', depth);
    if (c === '{') return this.dict(depth);
    if (c === '-' || c === '+' || (c >= '0' && c <= '9')) return this.int();
    for (const [word, v] of [['True', true], ['False', false], ['None', null]] as const) {
      if (this.s.startsWith(word, this.i) && !/[A-Za-z0-9_]/.test(this.s[this.i + word.length] ?? '')) {
        this.i += word.length;
        return v;
      }
    }
    this.fail(`unexpected ${JSON.stringify(c)}`);
  }

  /** `(x)` is x; `(x,)`, `()` and `(x, y)` are tuples; `[...]` lists. A trailing comma is allowed. */
  sequence(close: string, depth: number): PyValue {
    this.i++;
    const items: PyValue[] = [];
    let comma = false;
    for (;;) {
      this.ws();
      if (this.s[this.i] === close) {
        this.i++;
        break;
      }
      if (items.length > 0 && !comma) this.fail(`expected ',' or '${close}'`);
      items.push(this.value(depth + 1));
      this.ws();
      comma = this.s[this.i] === ',';
      if (comma) this.i++;
    }
    if (close === ']') return items;
    return items.length === 1 && !comma ? items[0]! : new PyTuple(items);
  }

  dict(depth: number): Map<string, PyValue> {
    this.i++;
    const d = new Map<string, PyValue>();
    let comma = true;
    for (;;) {
      this.ws();
      if (this.s[this.i] === '}') {
        this.i++;
        return d;
      }
      if (!comma) this.fail("expected ',' or '}'");
      const key = this.value(depth + 1);
      if (typeof key !== 'string') this.fail('dict keys must be strings');
      this.ws();
      if (this.s[this.i] !== ':') this.fail("expected ':'");
      this.i++;
      if (d.has(key)) this.fail(`key ${JSON.stringify(key)} appears twice`);
      d.set(key, this.value(depth + 1));
      this.ws();
      comma = this.s[this.i] === ',';
      if (comma) this.i++;
    }
  }

  int(): bigint {
    const m = /^([+-]?)([0-9]+)[lL]?/.exec(this.s.slice(this.i, this.i + MAX_INT_DIGITS + 3));
    if (!m || m[2]!.length > MAX_INT_DIGITS) this.fail('malformed or oversized integer');
    if (m[2]!.length > 1 && m[2]!.startsWith('0')) this.fail('integer with a leading zero');
    this.i += m[0].length;
    if (/[A-Za-z0-9_.]/.test(this.s[this.i] ?? '')) this.fail('only integers are allowed here');
    const v = BigInt(m[2]!);
    return m[1] === '-' ? -v : v;
  }

  string(): string {
    const q = this.s[this.i]!;
    this.i++;
    let out = '';
    for (;;) {
      const c = this.s[this.i];
      if (c === undefined || c === '\n') this.fail('unterminated string');
      this.i++;
      if (c === q) return out;
      if (c !== '\\') {
        out += c;
        continue;
      }
      const e = this.s[this.i++];
      const simple: Record<string, string> = { '\\': '\\', "'": "'", '"': '"', n: '\n', t: '\t', r: '\r', '0': '\0', a: '\x07', b: '\b', f: '\f', v: '\v' };
      if (e !== undefined && e in simple) out += simple[e];
      else if (e === 'x' || e === 'u' || e === 'U') {
        const n = e === 'x' ? 2 : e === 'u' ? 4 : 8;
        const hex = this.s.slice(this.i, this.i + n);
        if (!new RegExp(`^[0-9a-fA-F]{${n}}$`).test(hex)) this.fail(`bad \\${e} escape`);
        const cp = parseInt(hex, 16);
        if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) this.fail(`bad code point \\${e}${hex}`);
        out += String.fromCodePoint(cp);
        this.i += n;
      } else this.fail(`unsupported escape \\${e ?? ''}`);
    }
  }
}
