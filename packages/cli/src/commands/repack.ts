import { Option, type Command } from 'commander';
import { repackPath } from '@tensorport/lib/node';
import { table } from '../table.ts';
import { escapeTerminal, plural } from '../report.ts';
import { outputFlags, outputOptions, withOptions, type OutputFlags, parseBits, parseGroupSize, parseRounding, printWritten, runWrite } from './mlx-common.ts';
import type { CommandContext } from './context.ts';

export function registerRepack(program: Command, ctx: CommandContext): void {
  withOptions(
    program
      .command('repack')
      .description('Change the bits and group size of an MLX affine-quantized checkpoint; reports the error of every lossy layer')
      .argument('<input>', 'an MLX model directory, a safetensors file (its config.json is read when beside it) or an MLX .npz')
      .argument('<output>', "a directory (existing, or ending with '/') that receives a model directory, or a file in any format convert writes (.safetensors, .npz, .pt)")
      .addOption(new Option('--bits <n>', 'new bits: 2, 3, 4, 5, 6 or 8').argParser(parseBits).makeOptionMandatory())
      .addOption(new Option('--group-size <n>', 'new group size: 32, 64 or 128').argParser(parseGroupSize).makeOptionMandatory())
      .addOption(new Option('--rounding <kernel>', 'rounding of re-quantized layers: gpu or cpu').argParser(parseRounding).default('gpu')),
    outputOptions(),
  )
    .option('--json', 'print the result and the per-layer report as JSON')
    .addHelpText(
      'after',
      `
Lossless (codes re-packed, scales repeated) when the new bits are >= the old and the old group
size is a multiple of the new one; otherwise each layer is dequantized and quantized again, and the
largest |new - original| of its dequantized weights is printed.

Examples:
  $ tensorport repack ./model-4bit/ ./model-8bit-g32/ --bits 8 --group-size 32    # lossless
  $ tensorport repack ./model-8bit/ ./model-4bit/ --bits 4 --group-size 64        # lossy, error reported`,
    )
    .action(async (input: string, output: string, opts: { bits: number; groupSize: number; rounding: 'gpu' | 'cpu'; json?: boolean } & OutputFlags) => {
      const r = await runWrite(ctx, opts.json, 'repacking', output, (progress) =>
        repackPath({ input, output, bits: opts.bits, groupSize: opts.groupSize, rounding: opts.rounding, ...outputFlags(opts), ...progress }),
      );
      if (opts.json) {
        ctx.out(`${JSON.stringify(r, null, 2)}\n`);
        return;
      }
      const lossy = r.report.filter((l) => !l.lossless);
      ctx.out(`repacked ${plural(r.report.length, 'layer')} to ${opts.bits} bits/group ${opts.groupSize}: ${r.report.length - lossy.length} lossless, ${lossy.length} re-quantized\n`);
      if (lossy.length > 0) {
        const rows = lossy.map((l) => [escapeTerminal(l.layer), `${l.from.bits}/${l.from.groupSize}`, `${l.to.bits}/${l.to.groupSize}`, l.maxAbsError.toPrecision(4)]);
        ctx.out(`${table([['layer', 'from', 'to', 'max abs error'], ...rows], new Set([3]))}\n`);
      }
      printWritten(ctx, r);
    });
}
