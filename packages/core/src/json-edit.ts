/**
 * Editing a JSON object's text in place: replace, insert or remove top-level members and leave
 * every other byte as it was. A model's config.json must keep what its writer wrote: Python writes
 * `0.0` and `30.0`, a JS round trip writes `0` and `30`, and transformers' strict config classes
 * then refuse the file (Mixtral's `router_jitter_noise`, Gemma2's `final_logit_softcapping`).
 */
import { TensorportError } from './errors.ts';

/** Where one top-level member sits in the text (string indices, value end exclusive). */
export interface JsonMemberSpan {
  key: string;
  /** Index of the key's opening quote. */
  start: number;
  valueStart: number;
  valueEnd: number;
}

export interface JsonObjectSpans {
  /** Index of `{` and of its `}`. */
  open: number;
  close: number;
  members: JsonMemberSpan[];
}

function invalid(message: string): TensorportError {
  return new TensorportError('InvalidOption', `cannot edit JSON text: ${message}`);
}

const isWs = (c: string | undefined): boolean => c === ' ' || c === '\t' || c === '\n' || c === '\r';

/** End of the string literal starting at `i` (its opening quote), exclusive. */
function skipString(text: string, i: number): number {
  for (let j = i + 1; j < text.length; j++) {
    const c = text[j];
    if (c === '\\') j++;
    else if (c === '"') return j + 1;
  }
  throw invalid('unterminated string');
}

/** End of the value starting at `i`, exclusive: strings, nested containers, literals and numbers. */
function skipValue(text: string, i: number): number {
  const c = text[i];
  if (c === '"') return skipString(text, i);
  if (c === '{' || c === '[') {
    let depth = 0;
    for (let j = i; j < text.length; j++) {
      const d = text[j];
      if (d === '"') j = skipString(text, j) - 1;
      else if (d === '{' || d === '[') depth++;
      else if (d === '}' || d === ']') {
        depth--;
        if (depth === 0) return j + 1;
      }
    }
    throw invalid('unterminated container');
  }
  let j = i;
  while (j < text.length && !isWs(text[j]) && text[j] !== ',' && text[j] !== '}' && text[j] !== ']') j++;
  if (j === i) throw invalid(`no value at index ${i}`);
  return j;
}

function skipWs(text: string, i: number): number {
  while (i < text.length && isWs(text[i])) i++;
  return i;
}

/** The spans of a JSON object text's top-level members. The text must already be valid JSON (parse it first). */
export function jsonObjectSpans(text: string): JsonObjectSpans {
  let i = skipWs(text, 0);
  if (text[i] !== '{') throw invalid('the text is not a JSON object');
  const open = i;
  const members: JsonMemberSpan[] = [];
  i = skipWs(text, i + 1);
  if (text[i] === '}') return { open, close: i, members };
  for (;;) {
    if (text[i] !== '"') throw invalid(`expected a key at index ${i}`);
    const keyEnd = skipString(text, i);
    const key = JSON.parse(text.slice(i, keyEnd)) as string;
    let j = skipWs(text, keyEnd);
    if (text[j] !== ':') throw invalid(`expected ':' at index ${j}`);
    const valueStart = skipWs(text, j + 1);
    const valueEnd = skipValue(text, valueStart);
    members.push({ key, start: i, valueStart, valueEnd });
    j = skipWs(text, valueEnd);
    if (text[j] === '}') return { open, close: j, members };
    if (text[j] !== ',') throw invalid(`expected ',' or '}' at index ${j}`);
    i = skipWs(text, j + 1);
  }
}

/** Writes `value` as JSON with `unit` indentation, starting at nesting `level`; non-ASCII escaped as Python's json does. */
export function jsonText(value: unknown, unit: string, level: number): string {
  const text = JSON.stringify(value, null, unit);
  if (text === undefined) throw invalid(`cannot write ${typeof value} as JSON`);
  const ascii = text.replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return ascii.split('\n').join(`\n${unit.repeat(level)}`);
}

/**
 * Applies `changes` to the top-level members of a JSON object text: a key mapped to a value
 * replaces that member's value text (or is inserted, in sorted position when the keys are sorted,
 * else last), a key mapped to `undefined` is removed. Every other character is kept, so values the
 * edit does not touch stay byte for byte. New members are indented as the existing ones are.
 */
export function editJsonObject(text: string, changes: ReadonlyMap<string, unknown>): string {
  // One change at a time, the spans found again after each: config files are small, and edits
  // never overlap this way.
  let out = text;
  for (const [key, value] of changes) out = value === undefined ? removeMember(out, key) : setMember(out, key, value);
  return out;
}

function removeMember(text: string, key: string): string {
  for (;;) {
    const { open, members } = jsonObjectSpans(text);
    const i = members.findIndex((m) => m.key === key);
    if (i < 0) return text;
    const m = members[i]!;
    const prev = members[i - 1];
    const next = members[i + 1];
    // With the comma before it (or after it, for the first member) and the whitespace that led in.
    if (prev) text = text.slice(0, prev.valueEnd) + text.slice(m.valueEnd);
    else if (next) text = text.slice(0, m.start) + text.slice(next.start);
    else text = text.slice(0, open + 1) + text.slice(skipWs(text, m.valueEnd));
  }
}

function setMember(text: string, key: string, value: unknown): string {
  const { open, close, members } = jsonObjectSpans(text);
  const layout = memberLayout(text, members);
  const value1 = jsonText(value, layout.unit, 1);
  // A duplicate key: JSON.parse keeps the last one, so that is the one replaced.
  const found = members.filter((m) => m.key === key).pop();
  if (found) return text.slice(0, found.valueStart) + value1 + text.slice(found.valueEnd);
  const member = `${JSON.stringify(key)}: ${value1}`;
  if (members.length === 0) return `${text.slice(0, open + 1)}${layout.newline}${layout.unit}${member}${layout.newline}${text.slice(close)}`;
  const sorted = members.every((m, i) => i === 0 || members[i - 1]!.key <= m.key);
  const before = sorted ? members.find((m) => m.key > key) : undefined;
  if (before) return `${text.slice(0, before.start)}${member},${layout.separator}${text.slice(before.start)}`;
  const last = members[members.length - 1]!;
  return `${text.slice(0, last.valueEnd)},${layout.separator}${member}${text.slice(last.valueEnd)}`;
}

/** How the existing members are laid out: indent unit, newline, the text between two members. */
function memberLayout(text: string, members: readonly JsonMemberSpan[]): { unit: string; newline: string; separator: string } {
  const first = members[0];
  if (!first) return { unit: '    ', newline: '\n', separator: '\n    ' };
  let k = first.start;
  while (k > 0 && (text[k - 1] === ' ' || text[k - 1] === '\t')) k--;
  const unit = text.slice(k, first.start);
  const newline = text[k - 1] === '\n' ? (text[k - 2] === '\r' ? '\r\n' : '\n') : '';
  const separator = newline === '' ? ' ' : `${newline}${unit}`;
  return { unit, newline, separator };
}
