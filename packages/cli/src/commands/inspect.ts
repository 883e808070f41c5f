import type { Command } from 'commander';
import { inspectPath } from '@tensorport/lib/node';
import { readOptions } from '../options.ts';
import { renderInspect } from '../render.ts';
import type { CommandContext } from './context.ts';

export function registerInspect(program: Command, ctx: CommandContext): void {
  program
    .command('inspect')
    .description('List format, metadata and every tensor (dtype, shape, bytes, offsets) with parameter totals')
    .argument('<path>', 'a safetensors file, or a checkpoint directory (model.safetensors.index.json + shards, or model.safetensors)')
    .option('--json', 'print one JSON object instead of a table')
    .option('--void1 <dtype>', 'npz/npy: the one-byte dtype of <V1 arrays (ml_dtypes float8, e.g. F8_E4M3)')
    .option('--select <path>', 'torch: dotted path of the subtree holding the tensors (state_dict, model)')
    .option('--allow-objects', 'torch: read checkpoints that also pickle other objects (modules, numpy, Lightning, Namespace): each foreign class becomes an inert record, nothing runs; off by default (docs/security.md)')
    .option('--all-metadata', 'print every metadata value in full (GGUF arrays such as the vocabulary are cut after 16 elements, long values in the table after 100 characters)')
    .addHelpText(
      'after',
      `
Examples:
  $ tensorport inspect model.safetensors
  $ tensorport inspect ./checkpoint-dir/ --json | jq '.totals'`,
    )
    .action(async (path: string, opts: { json?: boolean; void1?: string; select?: string; allowObjects?: boolean; allMetadata?: boolean }) => {
      const full = opts.allMetadata === true;
      const report = await inspectPath(path, { read: readOptions(opts), fullMetadata: full });
      ctx.out(opts.json ? `${JSON.stringify(report, null, 2)}\n` : renderInspect(report, { fullMetadata: full }));
    });
}
