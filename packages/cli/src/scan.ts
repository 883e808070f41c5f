import type { Command } from 'commander';
import { scanPath, type ScanResult } from 'tensorport/node';
import { describeFinding, escapeTerminal } from './report.ts';

export type { ScanResult };

/**
 * Scans the pickles in a file by interpreting them without executing anything: a ZIP's pickle
 * members (torch archives, npz object arrays), a legacy torch stream, a bare .pkl, an object .npy.
 */
export const scan = scanPath;

/** Opcodes that import or call something, or could grow memory: listed with their counts. */
const RISKY_OPCODES = ['GLOBAL', 'STACK_GLOBAL', 'INST', 'OBJ', 'REDUCE', 'BUILD', 'NEWOBJ', 'NEWOBJ_EX', 'EXT1', 'EXT2', 'EXT4', 'PERSID', 'BINPERSID'];

export function registerScan(program: Command, io: { out: (text: string) => void; fail: () => void }): void {
  program
    .command('scan')
    .description('List every global and risky opcode in a file\'s pickles with a verdict; never executes anything')
    .argument('<file>', 'a .pt/.pth/.bin/.ckpt (ZIP or legacy), a bare .pkl, or an .npz/.npy with object arrays')
    .option('--json', 'print {safe, globals, findings, ...} as JSON')
    .addHelpText(
      'after',
      `
Verdicts: safe (only allowlisted globals, well-formed); UNSAFE (any finding); no pickle found
(nothing a pickle loader would import: safetensors, GGUF, ONNX, HDF5, a numeric npz, an empty
file); not a pickle (bytes of no format tensorport knows, which do not parse as a pickle).
Exits 0 when safe or no pickle found, 1 otherwise.

Examples:
  $ tensorport scan downloaded.pt
  $ tensorport scan pytorch_model.bin --json | jq '.globals'`,
    )
    .action(async (file: string, opts: { json?: boolean }) => {
      const r = await scan(file);
      if (!r.safe) io.fail();
      if (opts.json) {
        io.out(`${JSON.stringify(r, null, 2)}\n`);
        return;
      }
      for (const v of r.verdicts) io.out(`${v.allowed ? 'allowed   ' : 'DISALLOWED'} global ${escapeTerminal(v.global)}\n`);
      const risky = RISKY_OPCODES.filter((op) => (r.opcodes[op] ?? 0) > 0).map((op) => `${op}×${r.opcodes[op]}`);
      if (risky.length > 0) io.out(`opcodes   ${risky.join(' ')}\n`);
      for (const f of r.findings) io.out(`finding   ${describeFinding(f)}\n`);
      const bad = r.verdicts.filter((v) => !v.allowed).length;
      out(io, r, bad);
    });
}

const VERDICT_WORDS: Record<ScanResult['verdict'], string> = {
  safe: 'safe',
  unsafe: 'UNSAFE',
  'no-pickle': 'no pickle found',
  'not-a-pickle': 'not a pickle (no format tensorport knows)',
};

function out(io: { out: (text: string) => void }, r: ScanResult, bad: number): void {
  const what = `${r.pickles} pickle${r.pickles === 1 ? '' : 's'}, ${r.globals.length} global${r.globals.length === 1 ? '' : 's'}`;
  io.out(`${escapeTerminal(r.path)}: ${VERDICT_WORDS[r.verdict]}${r.kind ? ` (${r.kind})` : ''} (${what}${bad > 0 ? `, ${bad} disallowed` : ''}, ${r.findings.length} finding${r.findings.length === 1 ? '' : 's'})\n`);
}
