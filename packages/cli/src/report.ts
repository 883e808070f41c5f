import { TensorportError, type Finding } from '@tensorport/core';

/** Where a finding points: `tensor 'x', at byte N, in path`, or '' when it points nowhere. */
export function location(f: { tensor?: string; offset?: number | bigint | string; path?: string }, withPath = true): string {
  const parts: string[] = [];
  if (f.tensor !== undefined) parts.push(`tensor '${f.tensor}'`);
  if (f.offset !== undefined) parts.push(`at byte ${f.offset}`);
  if (withPath && f.path !== undefined) parts.push(`in ${f.path}`);
  return parts.join(', ');
}

/** `InvalidOffset: <message> (tensor 'x', at byte N)`. */
export function describeFinding(f: Finding): string {
  const where = location(f, !f.message.includes(f.path ?? '\0'));
  return `${f.code}: ${f.message}${where ? ` (${where})` : ''}`;
}

/** The one line the CLI prints for a failure: `tensorport: <code>: <message> (location)`. */
export function describeError(e: unknown): string {
  if (e instanceof TensorportError) return `tensorport: ${describeFinding(e.toJSON() as unknown as Finding)}`;
  if (e instanceof Error) {
    const code = (e as NodeJS.ErrnoException).code;
    return `tensorport: ${code ? `${code}: ` : ''}${e.message}`;
  }
  return `tensorport: ${String(e)}`;
}
