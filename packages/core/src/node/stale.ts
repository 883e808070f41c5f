import { lstatSync, readdirSync, readFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { rollBackMember, type JournalEntry } from './commit-group.ts';
import { ownerAlive, TEMP_PATTERN } from './owner.ts';

/**
 * Leftovers of runs that were killed (SIGKILL, a crash, power loss): temp files, backups and commit
 * journals named with our pattern whose process is gone. The first FileSink of a run in a directory
 * sweeps it: journals are rolled back first (they need the temp and backup files they name), then
 * the remaining files are removed. Each removal is reported; files of live processes and names of
 * any other shape are left alone.
 */
export type StaleFileReporter = (message: string, path: string) => void;

let reporter: StaleFileReporter = (message) => process.emitWarning(message, 'TensorportWarning');
const swept = new Set<string>();

/** Where sweep messages go (the CLI prints them as warnings). Returns the previous reporter. */
export function setStaleFileReporter(fn: StaleFileReporter): StaleFileReporter {
  const previous = reporter;
  reporter = fn;
  return previous;
}

/** Sweeps `dir` once per process (later calls are no-ops). */
export function sweepOnce(dir: string): void {
  if (swept.has(dir)) return;
  swept.add(dir);
  sweepStaleFiles(dir);
}

/** Removes stale files in `dir`; returns their names. Never throws: a sweep must not stop a write. */
export function sweepStaleFiles(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const stale = names.filter((n) => {
    const m = TEMP_PATTERN.exec(n);
    return m !== null && !ownerAlive(Number(m[2]), Number(m[3]));
  });
  const removed: string[] = [];
  for (const name of stale.filter((n) => n.endsWith('.commit'))) {
    const path = join(dir, name);
    const undone = rollBackJournal(dir, path);
    if (undone === null) continue;
    removed.push(name);
    reporter(`rolled back an interrupted multi-file write (${path}, left by process ${pidOf(name)}, no longer running)${undone.length ? `: ${undone.join(', ')}` : ''}`, path);
  }
  for (const name of stale.filter((n) => !n.endsWith('.commit'))) {
    const path = join(dir, name);
    let size: bigint;
    try {
      size = lstatSync(path, { bigint: true }).size;
      unlinkSync(path);
    } catch {
      continue; // removed meanwhile (by the rollback above, or another run)
    }
    removed.push(name);
    reporter(`removed stale temporary file ${path} (${size} bytes, left by process ${pidOf(name)}, no longer running)`, path);
  }
  return removed;
}

/** Rolls back the members a journal names; null when the journal cannot be read (left in place). */
function rollBackJournal(dir: string, path: string): string[] | null {
  let entries: JournalEntry[];
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as { members?: unknown };
    entries = (Array.isArray(parsed.members) ? parsed.members : []).filter(isEntry);
  } catch {
    // A journal cut short by a crash is never acted on: it was written before the first rename,
    // so no rename happened without a complete one.
    entries = [];
  }
  const undone: string[] = [];
  for (const e of entries) {
    const m = { target: join(dir, e.target), temp: join(dir, e.temp), backup: join(dir, e.backup), dev: e.dev, ino: e.ino };
    const before = describe(m.target, e);
    try {
      rollBackMember(m);
    } catch {
      return null;
    }
    if (before) undone.push(`${before} ${e.target}`);
  }
  try {
    unlinkSync(path);
  } catch {
    return null;
  }
  return undone;
}

function describe(target: string, e: JournalEntry): string | null {
  try {
    const st = lstatSync(target, { bigint: true });
    if (String(st.dev) === e.dev && String(st.ino) === e.ino) return 'removed';
  } catch {
    // no target
  }
  try {
    lstatSync(join(target, '..', e.backup));
    return 'restored';
  } catch {
    return null;
  }
}

function isEntry(x: unknown): x is JournalEntry {
  const e = x as Record<string, unknown> | null;
  const plain = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && !/[/\\\0]/.test(v) && v !== '.' && v !== '..';
  return e !== null && typeof e === 'object' && plain(e.target) && plain(e.temp) && plain(e.backup) && typeof e.dev === 'string' && typeof e.ino === 'string'
    && TEMP_PATTERN.test(e.temp) && TEMP_PATTERN.test(e.backup);
}

function pidOf(name: string): string {
  return TEMP_PATTERN.exec(name)?.[2] ?? '?';
}
