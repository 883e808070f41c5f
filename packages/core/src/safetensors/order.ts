import { dtypeRank, type DType } from '../dtype.ts';

/**
 * Compares two strings by their UTF-8 bytes, which is Unicode code point order (what Rust's
 * `String` and Python's `str` comparisons use). JavaScript's `<` compares UTF-16 code units, which
 * puts astral-plane characters (surrogate pairs, 0xD800–0xDFFF) before U+E000–U+FFFF. At the first
 * differing unit, moving surrogates above 0xFFFF (and everything from 0xE000 down to make room)
 * restores code point order without encoding either string.
 */
export function compareUtf8(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointKey(x) - codePointKey(y);
  }
  return a.length - b.length;
}

function codePointKey(unit: number): number {
  if (unit < 0xd800) return unit;
  return unit >= 0xe000 ? unit - 0x800 : unit + 0x2000;
}

/**
 * The reference writer's order: dtype rank descending (largest alignment first, so every tensor
 * starts at a multiple of its element size), then name by UTF-8 bytes. Returns indices into `items`.
 */
export function writeOrder(items: ReadonlyArray<{ readonly name: string; readonly dtype: DType }>): number[] {
  // Per item a byte each (typed arrays, not three arrays of 100,000 values)
  const ranks = Uint8Array.from(items, (t) => dtypeRank(t.dtype));
  // Names without units ≥ 0xD800 compare the same in UTF-16 and UTF-8: use the native comparison.
  const plain = Uint8Array.from(items, (t) => (ABOVE_D7FF.test(t.name) ? 0 : 1));
  const order = Array.from(items, (_, i) => i);
  order.sort((i, j) => {
    const r = ranks[j]! - ranks[i]!;
    if (r !== 0) return r;
    const a = items[i]!.name;
    const b = items[j]!.name;
    if (plain[i] && plain[j]) return a < b ? -1 : a > b ? 1 : 0;
    return compareUtf8(a, b);
  });
  return order;
}
const ABOVE_D7FF = /[\uD800-\uFFFF]/;
