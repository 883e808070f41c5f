import type { Command } from 'commander';
import { validatePath } from '@tensorport/lib/node';
import { readOptions } from '../options.ts';
import { describeFinding, escapeTerminal, plural } from '../report.ts';
import { EXIT_FAILED, type CommandContext } from './context.ts';

export function registerValidate(program: Command, ctx: CommandContext): void {
  program
    .command('validate')
    .description('Check a checkpoint against the safetensors rules; report every finding with its location')
    .argument('<path>', 'a safetensors file, or a checkpoint directory (model.safetensors.index.json + shards, or model.safetensors)')
    .option('--json', 'print {valid, errors, warnings} as JSON')
    .option('--void1 <dtype>', 'npz/npy: the one-byte dtype of <V1 arrays (ml_dtypes float8, e.g. F8_E4M3)')
    .option('--select <path>', 'torch: dotted path of the subtree holding the tensors (state_dict, model)')
    .addHelpText(
      'after',
      `
Exits 0 when the checkpoint is valid (warnings allowed), 1 when it is not.

Examples:
  $ tensorport validate downloaded.safetensors
  $ tensorport validate ./checkpoint-dir/ --json`,
    )
    .action(async (path: string, opts: { json?: boolean; void1?: string; select?: string }) => {
      const report = await validatePath(path, { read: readOptions(opts) });
      if (!report.valid) ctx.exit(EXIT_FAILED);
      if (opts.json) {
        ctx.out(`${JSON.stringify(report, null, 2)}\n`);
        return;
      }
      for (const e of report.errors) ctx.out(`error   ${describeFinding(e)}\n`);
      for (const w of report.warnings) ctx.out(`warning ${describeFinding(w)}\n`);
      const counts = [
        ...(report.files.length > 1 ? [plural(report.files.length, 'file')] : []),
        ...(report.valid ? [] : [plural(report.errors.length, 'error')]),
        plural(report.warnings.length, 'warning'),
      ].join(', ');
      ctx.out(`${escapeTerminal(path)}: ${report.valid ? 'valid' : 'INVALID'} (${counts})\n`);
    });
}
