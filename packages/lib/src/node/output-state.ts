/**
 * What is at an output path, to tell after an interrupted run whether anything changed there:
 * the command line's Ctrl-C line says "nothing written" only when the rollback (core's exit
 * cleanup) left the path as it was. Synchronous: it runs in a process 'exit' listener.
 */
import { lstatSync, readdirSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';

function statOf(path: string): string | null {
  try {
    const s = lstatSync(path);
    return `${s.isDirectory() ? 'dir' : 'file'}:${s.ino}:${s.size}:${s.mtimeMs}`;
  } catch {
    return null;
  }
}

/** null when nothing is there; a directory by its entries (our own temp files left out). */
export function outputState(path: string): string | null {
  const top = statOf(path);
  if (top === null || !top.startsWith('dir')) return top;
  let names: string[] = [];
  try {
    names = readdirSync(path).filter((n) => !n.includes('.tensorport-')).sort();
  } catch {
    // unreadable: compared by its entries' absence only
  }
  return `dir ${names.map((n) => `${n}=${statOf(join(path, n))}`).join(',')}`;
}

/** The state of an empty directory. */
export const EMPTY_DIRECTORY = 'dir ';

/** Removes `path` if it is an empty directory (one a run created and left empty, as a failed run removes it); true if removed. */
export function removeEmptyDirectory(path: string): boolean {
  try {
    rmdirSync(path);
    return true;
  } catch {
    return false;
  }
}
