import { main } from '../src/cli.ts';
import type { Run } from './helpers.ts';

/** The command line in this process: no build needed, stderr never a TTY, no signal handling. */
export async function runInProcess(...args: string[]): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const code = await main(args, { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) } });
  return { code, stdout, stderr };
}
