import { isAbsolute, relative } from 'node:path';
import { TensorportError, type Finding } from '@tensorport/lib';

/**
 * What a terminal would act on instead of showing: C0 controls (ESC starts colour/OSC/cursor
 * sequences, CR and LF rewrite or forge lines, BEL), DEL, C1 controls (U+009B is a one-character
 * CSI), bidi overrides/isolates/marks (they reorder what is shown) and the Unicode line separators.
 */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * The one escaping of untrusted text (tensor names, header text, global names, paths, messages
 * quoting them) in human output: `\n`, `\r`, `\t`, `\xHH` up to U+00FF, `\uHHHH` above. --json
 * output is JSON-escaped instead and carries the exact strings. See docs/cli.md.
 */
export function escapeTerminal(text: string): string {
  return text.replace(UNSAFE, (c) => {
    const code = c.charCodeAt(0);
    return NAMED[c] ?? (code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`);
  });
}

/** Where a finding points: `tensor 'x', at byte N, in path`, or '' when it points nowhere. */
export function location(f: { tensor?: string; offset?: number | bigint | string; path?: string }, withPath = true): string {
  const parts: string[] = [];
  if (f.tensor !== undefined) parts.push(`tensor '${escapeTerminal(f.tensor)}'`);
  if (f.offset !== undefined) parts.push(`at byte ${escapeTerminal(String(f.offset))}`);
  if (withPath && f.path !== undefined) parts.push(`in ${escapeTerminal(f.path)}`);
  return parts.join(', ');
}

/** `InvalidOffset: <message> (tensor 'x', at byte N)`. */
export function describeFinding(f: Finding): string {
  const where = location(f, !f.message.includes(f.path ?? '\0'));
  return `${escapeTerminal(f.code)}: ${escapeTerminal(f.message)}${where ? ` (${where})` : ''}`;
}

/** The one line the CLI prints for a failure: `tensorport: <code>: <message> (location)`. */
export function describeError(e: unknown): string {
  if (e instanceof TensorportError) return `tensorport: ${describeFinding(e.toJSON() as unknown as Finding)}`;
  if (e instanceof Error) {
    const code = (e as NodeJS.ErrnoException).code;
    return `tensorport: ${code ? `${escapeTerminal(code)}: ` : ''}${escapeTerminal(e.message)}`;
  }
  return `tensorport: ${escapeTerminal(String(e))}`;
}

/** `1 file`, `3 files`. */
export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** A path relative to the working directory when it is inside it (shorter to read), else as is. */
export function shortPath(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path;
}

/**
 * What a command given --json prints on stdout when it fails, instead of nothing (docs/cli.md,
 * "JSON output"): `{ok: false, exitCode, error: {code, message, path?, offset?, tensor?, other?}}`.
 * `error` is the TensorportError's toJSON(); a usage error has code InvalidOption and `usage: true`.
 */
export function failureObject(e: unknown, exitCode: number, usage = false): { ok: false; exitCode: number; error: Record<string, unknown> } {
  let error: Record<string, unknown>;
  if (e instanceof TensorportError) error = e.toJSON();
  else if (usage) error = { code: 'InvalidOption', message: e instanceof Error ? e.message : String(e) };
  else if (e instanceof Error && typeof (e as NodeJS.ErrnoException).code === 'string') error = { code: 'IoError', message: e.message, errno: (e as NodeJS.ErrnoException).code };
  else error = { code: 'InternalError', message: e instanceof Error ? e.message : String(e) };
  return { ok: false, exitCode, error: usage ? { ...error, usage: true } : error };
}
