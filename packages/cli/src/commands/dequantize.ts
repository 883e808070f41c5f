import { Option, type Command } from 'commander';
import { dequantizePath } from '@tensorport/lib/node';
import { outputFlags, outputOptions, withOptions, type OutputFlags, parseBits, parseFloatDtype, parseGlobalScale, parseGroupSize, parseRounding, printWritten, runWrite, summarizeLayers } from './mlx-common.ts';
import type { CommandContext } from './context.ts';

export function registerDequantize(program: Command, ctx: CommandContext): void {
  withOptions(
    program
      .command('dequantize')
      .description('Turn every MLX-quantized layer (affine, mxfp4, mxfp8, nvfp4) back into a float weight, then validate the output')
      .argument('<input>', 'an MLX model directory, a safetensors file (its config.json is read when beside it) or an MLX .npz')
      .argument('<output>', "a directory (existing, or ending with '/') that receives a model directory, or a file in any format convert writes (.safetensors, .npz, .pt)")
      .addOption(new Option('--dtype <dtype>', "output dtype: f16, bf16 or f32 (default: the scales' dtype; bf16 for the fp modes)").argParser(parseFloatDtype))
      .addOption(new Option('--bits <n>', 'bits, for files whose shapes fit several settings and that carry no config.json').argParser(parseBits))
      .addOption(new Option('--group-size <n>', 'group size, likewise').argParser(parseGroupSize))
      .option('--mode <mode>', 'affine, mxfp4, mxfp8 or nvfp4, likewise')
      .addOption(new Option('--rounding <kernel>', "whose arithmetic to reproduce for mxfp4/mxfp8/nvfp4: gpu (MLX's Metal kernel) or cpu (its CPU op graph)").argParser(parseRounding).default('gpu'))
      .addOption(new Option('--global-scale <x>', 'nvfp4: the global scale the weights were quantized with (mlx-lm does not record it)').argParser(parseGlobalScale)),
    outputOptions(),
  )
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      `
Bits, group size and mode come from config.json ("quantization"), else __metadata__, else the
shapes when only one MLX setting fits them. The layers' own biases (X.bias) and all other tensors
are copied unchanged; config.json loses its quantization sections.

Examples:
  $ tensorport dequantize ./Llama-3.2-1B-4bit/ ./Llama-3.2-1B-bf16/
  $ tensorport dequantize q.safetensors f32.safetensors --dtype f32 --bits 4 --group-size 64`,
    )
    .action(async (input: string, output: string, opts: { dtype?: 'F16' | 'BF16' | 'F32'; bits?: number; groupSize?: number; mode?: string; rounding: 'gpu' | 'cpu'; globalScale?: number; json?: boolean } & OutputFlags) => {
      const r = await runWrite(ctx, opts.json, 'dequantizing', output, (progress) =>
        dequantizePath({
          input,
          output,
          ...outputFlags(opts),
          ...(opts.dtype ? { dtype: opts.dtype } : {}),
          ...(opts.bits === undefined ? {} : { bits: opts.bits }),
          ...(opts.groupSize === undefined ? {} : { groupSize: opts.groupSize }),
          ...(opts.mode === undefined ? {} : { mode: opts.mode }),
          rounding: opts.rounding,
          ...(opts.globalScale === undefined ? {} : { globalScale: opts.globalScale }),
          ...progress,
        }),
      );
      if (opts.json) {
        ctx.out(`${JSON.stringify(r, null, 2)}\n`);
        return;
      }
      ctx.out(`dequantized ${summarizeLayers(r) || 'no layer'}\n`);
      printWritten(ctx, r);
    });
}
