import { Option, type Command } from 'commander';
import { TensorportError, type ScanResult } from '@tensorport/lib';
import { isDirectoryPath, scanFileAsTree, scanPath, scanTree, type TreeScan } from '@tensorport/lib/node';
import { describeFinding, escapeTerminal, failureObject } from '../report.ts';
import { toSarif } from '../sarif.ts';
import type { CommandContext } from './context.ts';

/** scan's exit codes (docs/cli.md): as picklescan and modelscan, 1 means something unsafe was found. */
export const EXIT_UNSAFE = 1;
/** A file could not be read (not a verdict): picklescan and modelscan use 2, which is our usage error. */
export const EXIT_UNREADABLE = 3;

/** Opcodes that import or call something, or could grow memory: listed with their counts. */
const RISKY_OPCODES = ['GLOBAL', 'STACK_GLOBAL', 'INST', 'OBJ', 'REDUCE', 'BUILD', 'NEWOBJ', 'NEWOBJ_EX', 'EXT1', 'EXT2', 'EXT4', 'PERSID', 'BINPERSID'];

/**
 * Scans the pickles in a file by interpreting them without executing anything (the library's
 * scanPath: a ZIP's pickle members, a legacy torch stream, a bare .pkl, an object .npy), or every
 * file below a directory.
 */
export function registerScan(program: Command, ctx: CommandContext): void {
  program
    .command('scan')
    .description('List every global and risky opcode in a file\'s pickles with a verdict; never executes anything')
    .argument('<path>', 'a .pt/.pth/.bin/.ckpt (ZIP or legacy), a bare .pkl, an .npz/.npy with object arrays, or a directory (every file below it, by content)')
    .option('--json', 'print {safe, globals, findings, ...} as JSON (a directory: {root, files, summary})')
    .addOption(new Option('--format <format>', 'output format').choices(['text', 'json', 'sarif']).default('text'))
    .addHelpText(
      'after',
      `
Verdicts: safe (only allowlisted globals, well-formed); UNSAFE (any finding); no pickle found
(nothing a pickle loader would import: safetensors, GGUF, ONNX, HDF5, a numeric npz, an empty
file); not a pickle (bytes of no format tensorport knows, which do not parse as a pickle).
Exit codes: 0 every file safe or without pickles; 1 something unsafe (or not a pickle) was found;
3 a file could not be read (and nothing unsafe was found); 2 usage errors.
A directory prints one line per file and a summary; --format sarif writes SARIF 2.1.0 (one result
per disallowed global, the file as artifact location) for code-scanning dashboards.

Examples:
  $ tensorport scan downloaded.pt
  $ tensorport scan pytorch_model.bin --json | jq '.globals'`,
    )
    .action(async (file: string, opts: { json?: boolean; format: 'text' | 'json' | 'sarif' }) => {
      const format = opts.json ? 'json' : opts.format;
      const isDir = await isDirectoryPath(file);
      if (isDir || format === 'sarif') {
        const tree = isDir ? await scanTree(file) : await scanFileAsTree(file);
        if (tree.summary.unsafe + tree.summary.notAPickle > 0) ctx.exit(EXIT_UNSAFE);
        else if (tree.summary.unreadable > 0) ctx.exit(EXIT_UNREADABLE);
        if (format === 'sarif') ctx.out(`${JSON.stringify(toSarif(isDir ? file : '.', tree.files, ctx.version), null, 2)}\n`);
        else if (format === 'json') ctx.out(`${JSON.stringify(tree, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2)}\n`);
        else treeLines(ctx, tree);
        return;
      }
      let r: ScanResult;
      try {
        r = await scanPath(file);
      } catch (e) {
        if (!(e instanceof TensorportError) || e.code !== 'IoError') throw e;
        // not a verdict: exit 3, and under --json the failure object (program.ts prints it for thrown errors)
        ctx.exit(EXIT_UNREADABLE);
        ctx.err(`tensorport: ${escapeTerminal(file)}: could not read: ${escapeTerminal(e.message)}\n`);
        if (format === 'json') ctx.out(`${JSON.stringify(failureObject(e, EXIT_UNREADABLE), null, 2)}\n`);
        return;
      }
      if (!r.safe) ctx.exit(EXIT_UNSAFE);
      if (format === 'json') {
        ctx.out(`${JSON.stringify(r, null, 2)}\n`);
        return;
      }
      for (const v of r.verdicts) ctx.out(`${v.allowed ? 'allowed   ' : 'DISALLOWED'} global ${escapeTerminal(v.global)}\n`);
      const risky = RISKY_OPCODES.filter((op) => (r.opcodes[op] ?? 0) > 0).map((op) => `${op}×${r.opcodes[op]}`);
      if (risky.length > 0) ctx.out(`opcodes   ${risky.join(' ')}\n`);
      for (const f of r.findings) ctx.out(`finding   ${describeFinding(f)}\n`);
      const bad = r.verdicts.filter((v) => !v.allowed).length;
      summaryLine(ctx, r, bad);
    });
}

const VERDICT_WORDS: Record<ScanResult['verdict'], string> = {
  safe: 'safe',
  unsafe: 'UNSAFE',
  'no-pickle': 'no pickle found',
  'not-a-pickle': 'not a pickle (no format tensorport knows)',
};

/** One line per file, then the totals. */
function treeLines(io: Pick<CommandContext, 'out'>, tree: TreeScan): void {
  for (const f of tree.files) {
    if (f.error) io.out(`${escapeTerminal(f.path)}: COULD NOT READ (${escapeTerminal(f.error.message)})\n`);
    else summaryLine(io, f.result!, f.result!.verdicts.filter((v) => !v.allowed).length);
  }
  const s = tree.summary;
  io.out(`scanned ${s.files} file${s.files === 1 ? '' : 's'}: ${s.safe} safe, ${s.unsafe} unsafe, ${s.noPickle} without pickles, ${s.notAPickle} not a pickle, ${s.unreadable} could not be read\n`);
}

function summaryLine(io: Pick<CommandContext, 'out'>, r: ScanResult, bad: number): void {
  const what = `${r.pickles} pickle${r.pickles === 1 ? '' : 's'}, ${r.globals.length} global${r.globals.length === 1 ? '' : 's'}`;
  io.out(`${escapeTerminal(r.path)}: ${VERDICT_WORDS[r.verdict]}${r.kind ? ` (${r.kind})` : ''} (${what}${bad > 0 ? `, ${bad} disallowed` : ''}, ${r.findings.length} finding${r.findings.length === 1 ? '' : 's'})\n`);
}
