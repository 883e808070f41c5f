import type { Command } from 'commander';
import type { ProgressStream } from '../progress.ts';

/** Exit codes: 0 success, 1 invalid input or failed work, 2 usage error (scan adds 3, see scan.ts). */
export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/**
 * What every command gets from the shell (program.ts): where to print, how to set the exit code
 * of a run that does not throw, and what the process around it allows. A command that fails throws
 * (a TensorportError); the shell prints it, as one JSON object under --json, and picks the exit code.
 */
export interface CommandContext {
  /** Text for stdout: the report, or the --json object. */
  out(text: string): void;
  /** Text for stderr: warnings and notes, never the report. */
  err(text: string): void;
  /** stderr as a progress bar draws on it (a TTY or not). */
  stderr: ProgressStream;
  /** The exit code when the command returns normally (a verdict such as "invalid" or "different"). */
  exit(code: number): void;
  version: string;
  /** True in the `tensorport` bin: a command may handle Ctrl-C (convert reports what its rollback did). */
  handleSignals: boolean;
}

/** The one shape of a command file: `register(program, ctx)` adds the command to the program. */
export type RegisterCommand = (program: Command, ctx: CommandContext) => void;
