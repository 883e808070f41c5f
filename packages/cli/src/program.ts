import { Command, CommanderError } from 'commander';
import { TensorportError } from '@tensorport/lib';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, type CommandContext } from './commands/context.ts';
import { registerConvert } from './commands/convert.ts';
import { registerDequantize } from './commands/dequantize.ts';
import { registerDiff } from './commands/diff.ts';
import { registerIdentify } from './commands/identify.ts';
import { registerInspect } from './commands/inspect.ts';
import { registerQuantize } from './commands/quantize.ts';
import { registerRepack } from './commands/repack.ts';
import { registerScan } from './commands/scan.ts';
import { registerServe } from './commands/serve.ts';
import { registerValidate } from './commands/validate.ts';
import type { ProgressStream } from './progress.ts';
import { describeError, escapeTerminal, failureObject } from './report.ts';
import { VERSION } from './version.ts';

export { EXIT_FAILED, EXIT_OK, EXIT_USAGE } from './commands/context.ts';

export interface CliIO {
  stdout: { write(text: string): unknown };
  stderr: ProgressStream;
  /** The `tensorport` bin: commands may handle Ctrl-C themselves (exit 130). Off for `main` as a library. */
  handleSignals?: boolean;
}

/** `--json` among a command's own arguments (before `--`), for a command that has the option. */
function wantsJson(command: Command | undefined, args: readonly string[]): boolean {
  if (!command) return false;
  const end = args.indexOf('--');
  const own = end < 0 ? args : args.slice(0, end);
  if (command.options.some((o) => o.long === '--json') && own.includes('--json')) return true;
  // scan's --format json is --json by another name
  return command.options.some((o) => o.long === '--format') && own.some((a, i) => a === '--format=json' || (a === '--format' && own[i + 1] === 'json'));
}

/** Runs the `tensorport` command line; resolves to the exit code and never calls process.exit. */
export async function main(argv: readonly string[], io: CliIO): Promise<number> {
  let exitCode = EXIT_OK;
  let usageMessage = '';
  let printed = false;
  const out = (text: string): void => {
    printed = true;
    io.stdout.write(text);
  };
  const err = (text: string): void => void io.stderr.write(text);
  const ctx: CommandContext = { out, err, stderr: io.stderr, exit: (code) => (exitCode = code), version: VERSION, handleSignals: io.handleSignals === true };

  const program = new Command('tensorport')
    .description('Move model weights between formats safely; every output is validated.')
    .version(VERSION, '-V, --version')
    .exitOverride()
    .configureOutput({
      writeOut: out,
      writeErr: err,
      // Kept and printed as one line below, where the exit code is decided.
      outputError: (text) => {
        usageMessage = text;
      },
    })
    .addHelpText(
      'after',
      `
Examples:
  $ tensorport inspect model.safetensors
  $ tensorport validate ./llama-shards/ --json
  $ tensorport convert model.safetensors model-f16.safetensors --dtype f16
  $ tensorport convert model.safetensors out/ --max-shard-size 2GB
  $ tensorport serve                      # the in-browser inspector on http://127.0.0.1:<port>/

Exit codes: 0 success, 1 invalid input or failed conversion, 2 usage error.`,
    );

  registerInspect(program, ctx);
  registerValidate(program, ctx);
  registerConvert(program, ctx);
  registerServe(program, ctx);
  registerScan(program, ctx);
  registerQuantize(program, ctx);
  registerDequantize(program, ctx);
  registerRepack(program, ctx);
  registerIdentify(program, ctx);
  registerDiff(program, ctx);

  try {
    if (argv.length === 0) {
      program.outputHelp({ error: true });
      return EXIT_USAGE;
    }
    await program.parseAsync([...argv], { from: 'user' });
    return exitCode;
  } catch (e) {
    const sub = program.commands.find((c) => c.name() === argv[0]);
    const hint = `(see 'tensorport${sub ? ` ${sub.name()}` : ''} --help')`;
    let code: number = EXIT_FAILED;
    let usage = false;
    let text: string;
    if (e instanceof CommanderError) {
      if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version') return EXIT_OK;
      if (e.code === 'commander.help') return e.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
      const message = (usageMessage || e.message).trim().replace(/^error: /, '').replace(/\s*\n\s*/g, ' ');
      e.message = message;
      [code, usage, text] = [EXIT_USAGE, true, `tensorport: usage: ${escapeTerminal(message)} ${hint}`];
    } else if (e instanceof TensorportError && e.code === 'InvalidOption') {
      [code, usage, text] = [EXIT_USAGE, true, `tensorport: usage: ${escapeTerminal(e.message)} ${hint}`];
    } else {
      text = describeError(e);
    }
    err(`${text}\n`);
    // One JSON object on stdout under --json, unless the command had already printed its own.
    if (!printed && wantsJson(sub, argv.slice(1))) out(`${JSON.stringify(failureObject(e, code, usage), null, 2)}\n`);
    return code;
  }
}
