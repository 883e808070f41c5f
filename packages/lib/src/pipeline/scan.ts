import type { Context, Finding } from '@tensorport/core';
import { allowedGlobals, scanContext, type ScanReport } from '@tensorport/torch-zip';
import { identify } from '../identify.ts';

export interface ScanResult {
  path: string;
  safe: boolean;
  /** safe, unsafe, no-pickle (nothing to import or call: safetensors, GGUF, empty…), not-a-pickle (unrecognised bytes). */
  verdict: ScanReport['verdict'];
  /** For no-pickle files: the format the bytes are (`safetensors`, `gguf`, …), when known. */
  kind?: string;
  /** What was scanned: 'torch-zip' (any ZIP: .pt, .npz), 'torch-legacy', or 'pickle' (bare pickle, .npy). */
  format: ScanReport['format'];
  /** Every global the pickles reference, `module.name`, in order of first appearance. */
  globals: string[];
  /** Each global with its verdict: allowed (on the allowlist torch's weights_only loader uses) or not. */
  verdicts: Array<{ global: string; allowed: boolean }>;
  findings: Finding[];
  /** How often each opcode ran. */
  opcodes: Record<string, number>;
  pickles: number;
}

/**
 * Scans the pickles in the input file by interpreting them without executing anything: a ZIP's
 * pickle members (torch archives, npz object arrays), a legacy torch stream, a bare .pkl, an object .npy.
 */
export async function scan(ctx: Context): Promise<ScanResult> {
  // every package's identify names the files that hold no pickle (GGUF included)
  const r = await scanContext(ctx, undefined, { identify: (source) => identify(source) });
  const allowed = new Set(allowedGlobals());
  const path = ctx.name;
  return {
    path,
    safe: r.safe,
    verdict: r.verdict,
    ...(r.kind === undefined ? {} : { kind: r.kind }),
    format: r.format,
    globals: r.globals,
    verdicts: r.globals.map((g) => ({ global: g, allowed: allowed.has(g) })),
    findings: r.findings.map((f) => (f.path === undefined ? { ...f, path } : f)),
    opcodes: r.opcodes,
    pickles: r.pickles,
  };
}
