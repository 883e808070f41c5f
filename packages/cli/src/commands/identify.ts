import type { Command } from 'commander';
import { TensorportError } from '@tensorport/lib';
import { identifyPath, type IdentifyReport } from '@tensorport/lib/node';
import { describeError, describeFinding, escapeTerminal } from '../report.ts';
import { EXIT_FAILED, type CommandContext } from './context.ts';

function detailText(d: Record<string, string | number>): string {
  const parts = Object.entries(d).map(([k, v]) => `${k} ${v}`);
  return parts.length > 0 ? ` [${parts.join(', ')}]` : '';
}

export function registerIdentify(program: Command, ctx: CommandContext): void {
  program
    .command('identify')
    .description('Name each file\'s format from its bytes (never its extension) and what tensorport can do with it')
    .argument('<file...>', 'files (or checkpoint directories) to identify; only a few KB of each is read')
    .option('--json', 'print one JSON array: {path, kind, what, can, details, warnings}')
    .addHelpText(
      'after',
      `
Exits 0 when every path could be read, 1 otherwise. An extension that disagrees with the bytes
is a warning naming both.

Examples:
  $ tensorport identify pytorch_model.bin model.mlx
  $ tensorport identify downloads/* --json | jq '.[] | {path, kind}'`,
    )
    .action(async (files: string[], opts: { json?: boolean }) => {
      const reports: IdentifyReport[] = [];
      for (const f of files) {
        const r = await identifyPath(f);
        if (r.kind === null) ctx.exit(EXIT_FAILED);
        reports.push(r);
      }
      if (opts.json) {
        ctx.out(`${JSON.stringify(reports, null, 2)}\n`);
        return;
      }
      for (const r of reports) {
        if (r.kind === null) {
          ctx.err(`${describeError(new TensorportError(((r.error?.code as string) ?? 'IoError') as 'IoError', String(r.error?.message ?? 'unreadable'), { path: r.path }))}\n`);
          continue;
        }
        ctx.out(`${escapeTerminal(r.path)}: ${escapeTerminal(r.what + detailText(r.details))}\n  can: ${r.can}\n`);
        for (const w of r.warnings) ctx.out(`  warning: ${describeFinding(w)}\n`);
      }
    });
}
