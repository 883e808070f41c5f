import type { PyValue } from './values.ts';

/** An exact int: a number when it fits a double exactly, else a bigint. */
export function normInt(v: bigint): number | bigint {
  return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
}

/**
 * LONG1/LONG4 payload: little-endian two's complement (so `8a 01 ff` is -1). One hex parse, linear
 * in the length, instead of shifting a BigInt byte by byte (quadratic).
 */
export function decodeLong(bytes: Uint8Array): number | bigint {
  const n = bytes.length;
  if (n === 0) return 0;
  let hex = '';
  for (let i = n - 1; i >= 0; i--) hex += bytes[i]!.toString(16).padStart(2, '0');
  let v = BigInt(`0x${hex}`);
  if (bytes[n - 1]! & 0x80) v -= 1n << BigInt(8 * n);
  return normInt(v);
}

// No leading zeros: CPython reads INT's text with strtol(base 0), so `010` is 8, and LONG's with
// int(text, 0), which refuses it.
const DECIMAL = /^[+-]?(?:0|[1-9][0-9]*)$/;

/** INT / LONG text arguments (protocol 0). `INT 01`/`00` are True/False; LONG may end in `L`. */
export function parseDecimal(text: string, long: boolean): PyValue | undefined {
  if (!long && text === '00') return false;
  if (!long && text === '01') return true;
  const digits = long && text.endsWith('L') ? text.slice(0, -1) : text;
  return DECIMAL.test(digits) ? normInt(BigInt(digits)) : undefined;
}

const FLOAT_TEXT = /^[+-]?(?:[0-9]+\.?[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|inf|nan|infinity)$/i;

export function parseFloatText(text: string): number | undefined {
  if (!FLOAT_TEXT.test(text)) return undefined;
  const t = text.toLowerCase().replace(/^([+-]?)inf(inity)?$/, '$1Infinity').replace(/^[+-]?nan$/, 'NaN');
  return Number(t);
}
