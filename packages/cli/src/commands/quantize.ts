import { Option, type Command } from 'commander';
import { MIXED_RECIPES } from '@tensorport/lib';
import { quantizePath } from '@tensorport/lib/node';
import { outputFlags, outputOptions, withOptions, type OutputFlags, parseBits, parseQuantizeGroupSize, parseRounding, printWritten, runWrite, summarizeLayers } from './mlx-common.ts';
import type { CommandContext } from './context.ts';

export function registerQuantize(program: Command, ctx: CommandContext): void {
  withOptions(
    program
      .command('quantize')
      .description('Quantize a checkpoint as mlx-lm does (Linear/Embedding weights to U32 codes + scales [+ biases]), then validate it')
      .argument('<input>', 'a safetensors file, a model directory (config.json + model.safetensors or shards + index), or an MLX .npz')
      .argument('<output>', "a directory (existing, or ending with '/') that receives an MLX model directory, or a file in any format convert writes (.safetensors, .npz, .pt)")
      .addOption(new Option('--bits <n>', 'bits per weight: 2, 3, 4, 5, 6 or 8 (default: 4; mxfp8 8)').argParser(parseBits))
      .addOption(new Option('--group-size <n>', 'weights per scale: 32, 64 or 128 for affine (default 64); mxfp4/mxfp8 32, nvfp4 16').argParser(parseQuantizeGroupSize))
      .addOption(new Option('--mode <mode>', 'affine, mxfp4, mxfp8 or nvfp4').default('affine'))
      .addOption(new Option('--recipe <name>', "one of mlx-lm's mixed-precision recipes (affine): layer bits as mlx_lm.convert --quant-predicate chooses them").choices(MIXED_RECIPES))
      .option('--bits-for <rule>', "per-layer override 'regex=bits', 'regex=bits/group_size' or 'regex=float' (repeatable; the first match decides, over --recipe)", (v: string, all: string[]) => [...all, v], [] as string[])
      .addOption(new Option('--rounding <kernel>', "whose rounding to reproduce bit for bit: gpu (MLX's Metal kernel) or cpu").argParser(parseRounding).default('gpu')),
    outputOptions(),
  )
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      `
A directory output gets model.safetensors (or 5 GiB shards) + model.safetensors.index.json +
config.json with "quantization"/"quantization_config", plus the input directory's tokenizer and
other small files. A file output is any format convert writes (.safetensors, .npz, .pt, or --to);
a safetensors file records bits, group size and mode in __metadata__.

Examples:
  $ tensorport quantize ./Llama-3.2-1B/ ./Llama-3.2-1B-4bit/
  $ tensorport quantize model.safetensors model-q8.safetensors --bits 8 --group-size 32
  $ tensorport quantize ./Llama-3.2-1B/ ./Llama-3.2-1B-mxfp4/ --mode mxfp4
  $ tensorport quantize ./Qwen3-0.6B/ ./Qwen3-0.6B-mixed/ --recipe mixed_3_6 --bits-for 'embed_tokens=8'

Without --recipe, the architecture's own rule applies where mlx-lm has one (e.g. MoE routers of
qwen3_moe, gpt_oss, minimax at 8 bits/group 64). Per-layer choices are written into config.json
as mlx-lm writes them, so they need a directory output.`,
    )
    .action(async (input: string, output: string, opts: { bits?: number; groupSize?: number; mode: string; recipe?: string; bitsFor: string[]; rounding: 'gpu' | 'cpu'; json?: boolean } & OutputFlags) => {
      const r = await runWrite(ctx, opts.json, 'quantizing', output, (progress) =>
        quantizePath({ input, output, ...(opts.bits === undefined ? {} : { bits: opts.bits }), ...(opts.groupSize === undefined ? {} : { groupSize: opts.groupSize }), mode: opts.mode, ...(opts.recipe ? { recipe: opts.recipe } : {}), bitsFor: opts.bitsFor, rounding: opts.rounding, ...outputFlags(opts), ...progress }),
      );
      if (opts.json) {
        ctx.out(`${JSON.stringify(r, null, 2)}\n`);
        return;
      }
      ctx.out(`quantized ${summarizeLayers(r) || 'no layer'}, ${opts.rounding} rounding\n`);
      printWritten(ctx, r);
    });
}
