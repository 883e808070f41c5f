import { Command, CommanderError, Option } from 'commander';
import { isAbsolute, relative } from 'node:path';
import { TensorportError } from '@tensorport/core';
import { registerDequantize } from './commands/dequantize.ts';
import { registerDiff } from './commands/diff.ts';
import { registerIdentify } from './commands/identify.ts';
import { registerQuantize } from './commands/quantize.ts';
import { registerRepack } from './commands/repack.ts';
import { convert, type ConvertResult, type TargetDtype } from './convert.ts';
import { renderInspect } from './render.ts';
import { inspect } from './inspect.ts';
import { ProgressBar, type ProgressStream } from './progress.ts';
import { describeError, describeFinding, escapeTerminal } from './report.ts';
import { registerScan } from './scan.ts';
import { startServer, untilInterrupted } from './serve.ts';
import { parseDtype, parseGgufType, parsePort, parseSizeOption, readOptions, type ReadFlags } from './options.ts';
import { formatBytes } from './size.ts';
import { validate } from './validate.ts';
import { VERSION } from './version.ts';

export interface CliIO {
  stdout: { write(text: string): unknown };
  stderr: ProgressStream;
}

/** Exit codes: 0 success, 1 invalid input or failed work, 2 usage error. */
export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** A path relative to the working directory when it is inside it (shorter to read), else as is. */
function shortPath(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path;
}

/** Runs the `tensorport` command line; resolves to the exit code and never calls process.exit. */
export async function main(argv: readonly string[], io: CliIO): Promise<number> {
  let exitCode = EXIT_OK;
  let usageMessage = '';
  const out = (text: string) => io.stdout.write(text);
  const err = (text: string) => io.stderr.write(text);

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
      const report = await inspect(path, { read: readOptions(opts), fullMetadata: full });
      out(opts.json ? `${JSON.stringify(report, null, 2)}\n` : renderInspect(report, { fullMetadata: full }));
    });

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
      const report = await validate(path, { read: readOptions(opts) });
      if (opts.json) {
        out(`${JSON.stringify(report, null, 2)}\n`);
      } else {
        for (const e of report.errors) out(`error   ${describeFinding(e)}\n`);
        for (const w of report.warnings) out(`warning ${describeFinding(w)}\n`);
        const counts = [
          ...(report.files.length > 1 ? [plural(report.files.length, 'file')] : []),
          ...(report.valid ? [] : [plural(report.errors.length, 'error')]),
          plural(report.warnings.length, 'warning'),
        ].join(', ');
        out(`${escapeTerminal(path)}: ${report.valid ? 'valid' : 'INVALID'} (${counts})\n`);
      }
      if (!report.valid) exitCode = EXIT_FAILED;
    });

  program
    .command('convert')
    .description('Convert between safetensors, npz, npy and PyTorch .pt (the output extension picks the format), then validate what was written')
    .argument('<input>', 'a checkpoint file (format detected by content, any extension), a sharded checkpoint directory or its index.json')
    .argument('<output>', "a file path (.safetensors, .npz, .npy, .pt/.pth/.bin/.ckpt), or a directory (existing, or ending with '/') that receives model.safetensors or safetensors shards + index")
    .addOption(new Option('--dtype <dtype>', 'cast F16/BF16/F32/F64 tensors to f16, bf16 or f32 (other dtypes are kept)').argParser(parseDtype))
    .addOption(
      new Option('--max-shard-size <size>', 'largest shard when the output is a directory (5GB = 5e9 bytes, 5GiB = 5·2^30)')
        .argParser(parseSizeOption)
        .default(5e9, '5GB'),
    )
    .option('--force', 'replace an existing output')
    .option('--json', 'print the result as JSON (files, tensors, bytes, warnings)')
    .option('--compress', 'npz output: deflate members (np.savez_compressed); stored by default')
    .option('--no-fsync', 'skip fsync before the final rename: faster, but a power loss right after may leave an empty output')
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
GGUF input: block types are dequantized to F32 (or --dtype), llama names mapped back to Hugging
Face's, and a directory output also gets config.json.
Existing outputs are refused without --force; the input is never overwritten, even with --force.
Everything written is re-read and validated; on any failure nothing is left at the output.

Examples:
  $ tensorport convert model.bin model.safetensors            # a .bin that is really safetensors
  $ tensorport convert model.safetensors model-bf16.safetensors --dtype bf16
  $ tensorport convert model.safetensors shards/ --max-shard-size 2GB
  $ tensorport convert shards/ merged.safetensors --force`,
    )
    .action(
      async (
        input: string,
        output: string,
        opts: { dtype?: TargetDtype; maxShardSize: number; force?: boolean; json?: boolean; compress?: boolean; verify?: boolean; fsync: boolean; ggufType?: string; keepBlocks?: boolean } & ReadFlags,
        command: Command,
      ) => {
        const bar = opts.json ? null : { current: null as ProgressBar | null };
        const result: ConvertResult = await convert({
          input,
          output,
          ...(opts.dtype ? { dtype: opts.dtype } : {}),
          // Only an explicit --max-shard-size makes a sharded write into a file path an error.
          ...(command.getOptionValueSource('maxShardSize') === 'default' ? {} : { maxShardSize: opts.maxShardSize }),
          force: opts.force === true,
          fsync: opts.fsync,
          ...(opts.compress ? { compress: true } : {}),
          read: readOptions(opts),
          verify: opts.verify === true,
          ...(opts.ggufType || opts.keepBlocks ? { gguf: { ...(opts.ggufType ? { type: opts.ggufType } : {}), ...(opts.keepBlocks ? { keepBlocks: true } : {}) } } : {}),
          onProgress: (done, total) => {
            if (!bar) return;
            bar.current ??= new ProgressBar(io.stderr, total, 'converting');
            bar.current.update(done);
          },
        }).finally(() => bar?.current?.finish());
        if (opts.json) {
          out(`${JSON.stringify(result, null, 2)}\n`);
          return;
        }
        for (const w of result.warnings) err(`tensorport: warning: ${describeFinding(w)}\n`);
        out(`wrote ${plural(result.files.length, 'file')} (${plural(result.tensors, 'tensor')}, ${formatBytes(result.bytes)}), validated${result.verified ? ' and diffed equal to the input' : ''}:\n`);
        for (const f of result.files) out(`  ${escapeTerminal(shortPath(f))}\n`);
      },
    );

  program
    .command('serve')
    .description('Serve the in-browser inspector on this machine: files are read in the browser and never uploaded')
    .addOption(new Option('--port <port>', 'TCP port (0 picks a free one)').argParser(parsePort).default(0))
    .option('--host <host>', 'interface to listen on; anything but loopback exposes the page to the network', '127.0.0.1')
    .option('--allow-host <name>', 'also accept requests whose Host header is <name> (repeatable; e.g. this machine\'s DNS name with --host 0.0.0.0)', (v: string, prev: string[]) => [...prev, v], [] as string[])
    .addHelpText(
      'after',
      `
Runs until Ctrl-C. The page (packages/web) reads checkpoint headers locally in a worker; the server
only serves the page's own files.

Examples:
  $ tensorport serve
  $ tensorport serve --port 8080`,
    )
    .action(async (opts: { port: number; host: string; allowHost: string[] }) => {
      const server = await startServer({ port: opts.port, host: opts.host, allowHosts: opts.allowHost });
      out(`tensorport: serving the inspector at ${server.url} (Ctrl-C stops)\n`);
      await untilInterrupted();
      await server.close();
    });

  registerScan(program, { out, err, fail: () => (exitCode = EXIT_FAILED), exit: (code) => (exitCode = code), version: VERSION });

  registerQuantize(program, io);
  registerDequantize(program, io);
  registerRepack(program, io);
  registerIdentify(program, { out, err, fail: () => (exitCode = EXIT_FAILED) });
  registerDiff(program, { ...io, fail: () => (exitCode = EXIT_FAILED) });

  try {
    if (argv.length === 0) {
      program.outputHelp({ error: true });
      return EXIT_USAGE;
    }
    await program.parseAsync([...argv], { from: 'user' });
    return exitCode;
  } catch (e) {
    const sub = program.commands.some((c) => c.name() === argv[0]) ? ` ${argv[0]}` : '';
    const hint = `(see 'tensorport${sub} --help')`;
    if (e instanceof CommanderError) {
      if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version') return EXIT_OK;
      if (e.code === 'commander.help') return e.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
      const text = (usageMessage || e.message).trim().replace(/^error: /, '').replace(/\s*\n\s*/g, ' ');
      err(`tensorport: usage: ${escapeTerminal(text)} ${hint}\n`);
      return EXIT_USAGE;
    }
    if (e instanceof TensorportError && e.code === 'InvalidOption') {
      err(`tensorport: usage: ${escapeTerminal(e.message)} ${hint}\n`);
      return EXIT_USAGE;
    }
    err(`${describeError(e)}\n`);
    return EXIT_FAILED;
  }
}
