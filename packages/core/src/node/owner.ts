import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';

/**
 * Who owns a temp file: its names carry the writer's pid and start time (clock ticks since boot,
 * from /proc/<pid>/stat), so a later run can tell a file whose writer is gone (kill -9) from one a
 * live process is still writing. The start time guards against a reused pid. Without procfs
 * (macOS) the start time is 0 and only the pid is checked.
 */
export const TEMP_PATTERN = /^\.(?:(.+)\.)?tensorport-(\d+)-(\d+)-[0-9a-f]{8}\.(tmp|bak|commit)$/;

let self: string | null = null;

/** `<pid>-<start>` of this process. */
export function ownerToken(): string {
  self ??= `${process.pid}-${processStart(process.pid) ?? 0}`;
  return self;
}

/** A name beside `base` (a file name, or '' for a directory-level file) that the sweep recognises as ours. */
export function ownedName(base: string, kind: 'tmp' | 'bak' | 'commit'): string {
  return `.${base ? `${base}.` : ''}tensorport-${ownerToken()}-${randomBytes(4).toString('hex')}.${kind}`;
}

export function processStart(pid: number): number | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return null;
  }
  // comm (field 2) may hold spaces and parentheses: fields after the last ')' start at field 3.
  const start = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
  return Number.isSafeInteger(start) ? start : null;
}

/** True when the process that wrote a file named with (pid, start) may still be running. */
export function ownerAlive(pid: number, start: number): boolean {
  if (`${pid}-${start}` === ownerToken()) return true;
  if (processStart(process.pid) !== null) {
    const now = processStart(pid);
    return now !== null && (start === 0 || now === start);
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as { code?: string }).code === 'EPERM';
  }
}
