import { EMPTY_DIRECTORY, outputState, removeEmptyDirectory } from '@tensorport/lib/node';
import { escapeTerminal } from './report.ts';

/**
 * Runs `work`; a Ctrl-C (SIGINT) meanwhile runs `cleanup` (a progress bar cleared), then ends the
 * process with exit code 130 and one line on stderr saying what is left at `output`. core's cleanup
 * (temp files, multi-file rollbacks) runs on the process's exit before that line is decided, so the
 * line reports what the rollback did: nothing written (the output is absent, or as it was before),
 * else that it may be incomplete.
 */
export async function interruptible<T>(output: string, err: (text: string) => void, work: () => Promise<T>, cleanup?: () => void): Promise<T> {
  const before = outputState(output);
  const onSigint = (): void => {
    // e.g. clearing a progress bar, so the line below starts a line of its own
    cleanup?.();
    // Added now, so it runs after core's exit listener (installed when the first temp file was made).
    process.once('exit', () => {
      let after = outputState(output);
      // the directory this run created, left empty: removed as a failed run removes it (else it stays, reported below)
      if (before === null && after === EMPTY_DIRECTORY && removeEmptyDirectory(output)) after = null;
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
