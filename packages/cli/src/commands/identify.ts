import type { Command } from 'commander';
import { stat } from 'node:fs/promises';
import { TensorportError, isRemoteInput, type Finding, type Identification } from '@tensorport/core';
import { FileSource, nodeZlibCodec } from '@tensorport/core/node';
import { defaultRegistry, identify } from 'tensorport';
import { withPath } from 'tensorport/node';
import { describeError, describeFinding, escapeTerminal } from '../report.ts';
import { EXIT_FAILED, type CommandContext } from './context.ts';

export interface IdentifyReport {
  path: string;
  /** identify's kind, 'directory' for a checkpoint directory, null when the path could not be read. */
  kind: string | null;
  what: string;
  can: string;
  container?: string;
  details: Record<string, string | number>;
  warnings: Finding[];
  error?: Record<string, unknown>;
}

/** Names one path's format from its bytes (a directory: the checkpoint layout it holds). */
export async function identifyPath(path: string): Promise<IdentifyReport> {
  if (isRemoteInput(path)) {
    // a URL or hf:// address: the probe's bytes (a bare repo: the weights file it resolves to)
    return withPath(path, async (ctx) => {
      const r: Identification = await identify(await ctx.source(), { codec: nodeZlibCodec });
      return { path: ctx.name, kind: r.kind, what: r.what, can: r.can, ...(r.container ? { container: r.container } : {}), details: r.details, warnings: r.warnings };
    }).catch((e: unknown) => {
      if (!(e instanceof TensorportError)) throw e;
      return { path, kind: null, what: 'unreadable', can: 'nothing', details: {}, warnings: [], error: e.toJSON() };
    });
  }
  const info = await stat(path).catch(() => null);
  if (info?.isDirectory()) {
    return withPath(path, async (ctx) => {
      const format = await defaultRegistry.sniff(ctx);
      const entries = (await ctx.folder.list()).length;
      return format
        ? { path, kind: 'directory', what: `a ${format.name} checkpoint directory`, can: 'convert, inspect, validate', details: { entries }, warnings: [] }
        : { path, kind: 'directory', what: 'a directory without a checkpoint tensorport can read', can: 'not supported', details: { entries }, warnings: [] };
    });
  }
  let source: FileSource;
  try {
    source = await FileSource.open(path);
  } catch (e) {
    const err = e instanceof TensorportError ? e : new TensorportError('IoError', `cannot read ${path}: ${(e as Error).message}`, { path, cause: e });
    return { path, kind: null, what: 'unreadable', can: 'nothing', details: {}, warnings: [], error: err.toJSON() };
  }
  try {
    const r: Identification = await identify(source, { codec: nodeZlibCodec });
    return { path, kind: r.kind, what: r.what, can: r.can, ...(r.container ? { container: r.container } : {}), details: r.details, warnings: r.warnings };
  } finally {
    await source.close();
  }
}

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
