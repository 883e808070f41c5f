import { lstatSync, readdirSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import { escapeTerminal } from './report.ts';

function statOf(path: string): string | null {
  try {
    const s = lstatSync(path);
    return `${s.isDirectory() ? 'dir' : 'file'}:${s.ino}:${s.size}:${s.mtimeMs}`;
  } catch {
    return null;
  }
}

/** What is at a path, enough to tell whether anything changed there (our own temp files left out). */
function snapshot(path: string): string | null {
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

/**
 * Runs `work`; a Ctrl-C (SIGINT) meanwhile runs `cleanup` (a progress bar cleared), then ends the
 * process with exit code 130 and one line on stderr saying what is left at `output`. core's cleanup
 * (temp files, multi-file rollbacks) runs on the process's exit before that line is decided, so the
 * line reports what the rollback did: nothing written (the output is absent, or as it was before),
 * else that it may be incomplete.
 */
export async function interruptible<T>(output: string, err: (text: string) => void, work: () => Promise<T>, cleanup?: () => void): Promise<T> {
  const before = snapshot(output);
  const onSigint = (): void => {
    // e.g. clearing a progress bar, so the line below starts a line of its own
    cleanup?.();
    // Added now, so it runs after core's exit listener (installed when the first temp file was made).
    process.once('exit', () => {
      let after = snapshot(output);
      if (before === null && after === 'dir ') {
        // the directory this run created, left empty: removed as a failed run removes it
        try {
          rmdirSync(output);
          after = null;
        } catch {
          // it stays; reported below
        }
      }
      const where = escapeTerminal(output);
      if (after === before) err(before === null ? 'tensorport: interrupted, nothing written\n' : `tensorport: interrupted, nothing written (${where} is as it was)\n`);
      else err(`tensorport: interrupted while writing ${where}: it may be incomplete; check it or convert again with --force\n`);
    });
    process.exit(130);
  };
  process.on('SIGINT', onSigint);
  try {
    return await work();
  } finally {
    process.off('SIGINT', onSigint);
  }
}
