import { Option, type Command } from 'commander';
import type { CastTarget } from '@tensorport/lib';
import { convertPath } from '@tensorport/lib/node';
import { interruptible } from '../interrupt.ts';
import { OUTPUT_FORMAT_NAMES, parseDtype, parseGgufType, parseJobs, parseMetadataPair, parseOutputFormat, parseSizeOption, readOptions, type ReadFlags } from '../options.ts';
import { progressFor } from '../progress.ts';
import { describeFinding, escapeTerminal, plural, shortPath } from '../report.ts';
import { formatBytes } from '../size.ts';
import type { CommandContext } from './context.ts';

interface ConvertFlags extends ReadFlags {
  dtype?: CastTarget;
  maxShardSize: number;
  to?: string;
  metadata?: Record<string, string>;
  jobs?: number;
  force?: boolean;
  json?: boolean;
  compress?: boolean;
  verify?: boolean;
  fsync: boolean;
  ggufType?: string;
  keepBlocks?: boolean;
}

export function registerConvert(program: Command, ctx: CommandContext): void {
  program
    .command('convert')
    .description('Convert between safetensors, npz, npy, PyTorch .pt and GGUF (the output extension, or --to, picks the format), then validate what was written')
    .argument('<input>', 'a checkpoint file (format detected by content, any extension), a sharded checkpoint directory or its index.json')
    .argument('<output>', "a file path (.safetensors, .npz, .npy, .pt/.pth/.bin/.ckpt, .gguf), or a directory (existing, or ending with '/') that receives model.safetensors or safetensors shards + index")
    .addOption(new Option('--to <format>', `output format, whatever the output's name: ${OUTPUT_FORMAT_NAMES.join(', ')}`).argParser(parseOutputFormat))
    .addOption(new Option('--dtype <dtype>', 'cast F16/BF16/F32/F64 tensors to f16, bf16 or f32 (other dtypes are kept)').argParser(parseDtype))
    .addOption(
      new Option('--max-shard-size <size>', 'largest shard when the output is a directory (5GB = 5e9 bytes, 5GiB = 5·2^30)')
        .argParser(parseSizeOption)
        .default(5e9, '5GB'),
    )
    .addOption(new Option('--jobs <n>', 'safetensors directory output: shards written at the same time (the bytes are the same)').argParser(parseJobs))
    .addOption(new Option('--metadata <KEY=VALUE>', "safetensors output: an entry added to __metadata__ (repeatable; replaces the input's value of that key)").argParser(parseMetadataPair))
    .option('--force', 'replace an existing output')
    .option('--json', 'print the result as JSON (files, tensors, bytes, warnings); a failure as {ok: false, error}')
    .option('--compress', 'npz output: deflate members (np.savez_compressed); stored by default')
    .option('--no-fsync', 'skip fsync before the final rename: faster, but a power loss right after may leave an empty output')
    .option('--no-crc', "npz input: skip each member's CRC-32 check (for an input checked another way, e.g. a known sha-256); warns, never the default")
    .option('--void1 <dtype>', 'npz/npy input: the one-byte dtype of <V1 arrays (ml_dtypes float8, e.g. F8_E4M3)')
    .option('--name <name>', 'npy input: the tensor name (default: the file stem)')
    .option('--select <path>', 'torch input: dotted path of the subtree holding the tensors (state_dict, model)')
    .option('--keep-aliases', 'torch input: write tied weights under every name (default: once, others in metadata)')
    .option('--allow-objects', 'torch: read checkpoints that also pickle other objects (modules, numpy, Lightning, Namespace): each foreign class becomes an inert record, nothing runs; off by default (docs/security.md)')
    .option('--verify', 're-read the output and diff its values bit for bit against the input (off by default: about doubles the time)')
    .addOption(new Option('--gguf-type <type>', '.gguf output: ggml type of the matrices (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, TQ1_0, TQ2_0, MXFP4; default: the input\'s float dtype)').argParser(parseGgufType))
    .option('--keep-blocks', 'GGUF input: write quantized tensors as their raw ggml block bytes (U8, type in __metadata__) instead of dequantizing them to F32 (or --dtype)')
    .addHelpText(
      'after',
      `
Output rules:
  out.safetensors          one file at that path, whatever the size
  out/ or an existing dir  out/model.safetensors, or when the tensors exceed --max-shard-size:
                           out/model-00001-of-0000N.safetensors ... + out/model.safetensors.index.json
  out.gguf                 GGUF; a llama config.json beside the input gives llama.cpp names and keys
  out.onnx, out.h5, out    refused (an extension tensorport cannot write, or none): give --to
GGUF input: block types are dequantized to F32 (or --dtype), llama names mapped back to Hugging
Face's, and a directory output also gets config.json.
A model directory input into a directory output also gets its config.json, generation config and
tokenizer files (copied unchanged), so from_pretrained(out/) works.
Existing outputs, and old shards or an old index in the output directory, are refused without
--force (which removes them with this write); the input is never overwritten, even with --force.
Everything written is re-read and validated; on any failure or Ctrl-C nothing is left at the output.

Examples:
  $ tensorport convert model.bin model.safetensors            # a .bin that is really safetensors
  $ tensorport convert model.safetensors model-bf16.safetensors --dtype bf16
  $ tensorport convert model.safetensors shards/ --max-shard-size 2GB --jobs 4
  $ tensorport convert pytorch_model.bin model.safetensors --metadata format=pt --metadata license=mit
  $ tensorport convert shards/ merged.safetensors --force`,
    )
    .action(async (input: string, output: string, opts: ConvertFlags, command: Command) => {
      const bar = progressFor(ctx.stderr, opts.json, 'converting');
      const run = () =>
        convertPath({
          input,
          output,
          ...(opts.to ? { to: opts.to } : {}),
          ...(opts.dtype ? { dtype: opts.dtype } : {}),
          // Only an explicit --max-shard-size makes a sharded write into a file path an error.
          ...(command.getOptionValueSource('maxShardSize') === 'default' ? {} : { maxShardSize: opts.maxShardSize }),
          ...(opts.metadata ? { metadata: opts.metadata } : {}),
          ...(opts.jobs === undefined ? {} : { jobs: opts.jobs }),
          force: opts.force === true,
          fsync: opts.fsync,
          ...(opts.compress ? { compress: true } : {}),
          read: readOptions(opts),
          verify: opts.verify === true,
          ...(opts.ggufType || opts.keepBlocks ? { gguf: { ...(opts.ggufType ? { type: opts.ggufType } : {}), ...(opts.keepBlocks ? { keepBlocks: true } : {}) } } : {}),
          ...(bar.onProgress ? { onProgress: bar.onProgress } : {}),
        }).finally(bar.finish);
      const result = ctx.handleSignals ? await interruptible(output, ctx.err, run, bar.finish) : await run();
      if (opts.json) {
        ctx.out(`${JSON.stringify(result, null, 2)}\n`);
        return;
      }
      for (const w of result.warnings) ctx.err(`tensorport: warning: ${describeFinding(w)}\n`);
      ctx.out(`wrote ${plural(result.files.length, 'file')} (${plural(result.tensors, 'tensor')}, ${formatBytes(result.bytes)}), validated${result.verified ? ' and diffed equal to the input' : ''}:\n`);
      for (const f of result.files) ctx.out(`  ${escapeTerminal(shortPath(f))}\n`);
    });
}
