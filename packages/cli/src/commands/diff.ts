import { InvalidArgumentError, type Command } from 'commander';
import type { DiffOptions, TensorChange } from '@tensorport/lib';
import type { DiffReport } from '@tensorport/lib';
import { diffPaths } from '@tensorport/lib/node';
import { describeFinding, escapeTerminal } from '../report.ts';
import { formatBytes } from '../size.ts';
import { progressFor } from '../progress.ts';
import { EXIT_FAILED, type CommandContext } from './context.ts';

export type DiffPathsOptions = DiffOptions;
export type DiffPathsResult = DiffReport;

function parseTolerance(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0) throw new InvalidArgumentError('expected a non-negative number such as 1e-5');
  return n;
}

function num(x: number | undefined): string {
  return x === undefined ? '-' : x === 0 ? '0' : Math.abs(x) >= 1e-3 && Math.abs(x) < 1e4 ? x.toPrecision(4) : x.toExponential(3);
}

function describeChange(c: TensorChange): string {
  if (c.reason === 'shape' || (c.reason === 'dtype' && c.mismatches === undefined)) return `${c.reason} ${c.detail ?? ''}`.trim();
  const where = c.firstMismatch === undefined ? '' : `, first at element ${c.firstMismatch}`;
  const err = c.bitwise ? ' bitwise only (-0.0/0.0 or NaN payloads)' : c.maxAbs === undefined ? ' (compared bitwise)' : ` (max abs ${num(c.maxAbs)}, max rel ${num(c.maxRel)})`;
  const head = c.reason === 'dtype' ? `dtype ${c.detail ?? ''}; values` : c.detail ? `values (${c.detail})` : 'values';
  return `${head}: ${c.mismatches} element(s) differ${err}${where}`;
}

export function registerDiff(program: Command, ctx: CommandContext): void {
  program
    .command('diff')
    .description('Compare two checkpoints tensor by tensor (any formats): names, dtypes, shapes and values, streaming')
    .argument('<a>', 'a checkpoint file or directory in any format tensorport reads')
    .argument('<b>', 'the other checkpoint; tolerances are relative to its values')
    .option('--atol <x>', 'absolute tolerance (numpy isclose: |a-b| <= atol + rtol*|b|)', parseTolerance)
    .option('--rtol <y>', 'relative tolerance; without --atol/--rtol values must be bit-identical', parseTolerance)
    .option('--names-only', 'compare names, dtypes and shapes only; read no tensor data')
    .option('--json', 'print {equal, onlyInA, onlyInB, changed: [{name, reason, maxAbs, maxRel, mismatches}]}')
    .addHelpText(
      'after',
      `
Exits 0 when equal (within tolerances), 1 when not, 2 on a usage error. NaN equals NaN at the same
place; F16/BF16/F32/F64 and integers are compared as values (two dtypes in F64, 64-bit integers
exactly), other dtypes bitwise; a dtype change is a difference unless tolerances are given. Tied weights
recorded in metadata (removed -> kept, as convert.py writes) count as present.

Examples:
  $ tensorport diff model.safetensors pytorch_model.bin
  $ tensorport diff model.safetensors model-bf16.safetensors --atol 1e-2 --rtol 1e-2 --json`,
    )
    .action(async (a: string, b: string, opts: { atol?: number; rtol?: number; namesOnly?: boolean; json?: boolean }) => {
      const bar = progressFor(ctx.stderr, opts.json, 'comparing');
      const r = await diffPaths(a, b, {
        ...(opts.atol === undefined ? {} : { atol: opts.atol }),
        ...(opts.rtol === undefined ? {} : { rtol: opts.rtol }),
        namesOnly: opts.namesOnly === true,
        ...(bar.onProgress ? { onProgress: bar.onProgress } : {}),
      }).finally(bar.finish);
      if (!r.equal) ctx.exit(EXIT_FAILED);
      if (opts.json) {
        ctx.out(`${JSON.stringify(r, null, 2)}\n`);
        return;
      }
      for (const w of r.warnings) ctx.err(`tensorport: warning: ${describeFinding(w)}\n`);
      for (const n of r.onlyInA) ctx.out(`only in a  ${escapeTerminal(n)}\n`);
      for (const n of r.onlyInB) ctx.out(`only in b  ${escapeTerminal(n)}\n`);
      for (const c of r.changed) ctx.out(`changed    ${escapeTerminal(c.name)}: ${escapeTerminal(describeChange(c))}\n`);
      for (const x of r.aliases) ctx.out(`tied       ${escapeTerminal(x.name)} -> ${escapeTerminal(x.kept)} (in ${x.side}'s metadata)\n`);
      const worst = r.errors.reduce<(typeof r.errors)[number] | null>((w, e) => (w === null || e.maxAbs > w.maxAbs ? e : w), null);
      if (worst && (opts.atol !== undefined || opts.rtol !== undefined)) ctx.out(`largest    ${escapeTerminal(worst.name)} (${worst.dtype}): max abs ${num(worst.maxAbs)}, max rel ${num(worst.maxRel)}, ${worst.overTolerance} of ${worst.elements} over tolerance\n`);
      const what = opts.namesOnly ? 'names, dtypes and shapes' : `${formatBytes(r.bytesCompared)} of tensor data`;
      ctx.out(`${r.equal ? 'equal' : 'DIFFERENT'}: ${r.compared} tensor(s) compared (${what}), ${r.onlyInA.length} only in a, ${r.onlyInB.length} only in b, ${r.changed.length} changed\n`);
    });
}
