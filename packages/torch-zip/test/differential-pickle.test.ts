import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { runPickle } from '../src/pickle/interpreter.ts';
import { PY2_IMPORTS, PY2_NAMES } from '../src/pickle/py2-names.ts';
import { StorageTable } from '../src/torch/persistent.ts';

/**
 * Differential test against CPython's C unpickler (see helpers/pickle_differential.py): thousands
 * of seeded opcode streams, each unpickled by `_pickle.Unpickler` as a file (torch's ZIP path), as
 * memory (`pickle.loads`) and through a small read buffer (open() of a legacy file), with a
 * find_class that records names and imports nothing; and scanned by our interpreter.
 *
 * The rule, per stream and per way of reading (C = the globals CPython imported, T = ours, both
 * in order of first appearance):
 * - C and T never contradict each other: one is a prefix of the other;
 * - when our scan is clean (reaches STOP, no finding but disallowed globals), CPython must either
 *   succeed with T = C, stopping at the same byte, or fail having imported a prefix of T.
 * A scan that is not clean (the file is reported invalid, so never safe) may stop early; nothing
 * else may differ. "We listed fewer globals than Python imported" is therefore impossible for a
 * file we call well-formed.
 */

const ORACLE = fileURLToPath(new URL('./helpers/pickle_differential.py', import.meta.url));
// TENSORPORT_DIFF_SEED / TENSORPORT_DIFF_STREAMS explore further locally; CI runs the fixed seed.
const SEED = Number(process.env.TENSORPORT_DIFF_SEED ?? 20261201);
const STREAMS = Number(process.env.TENSORPORT_DIFF_STREAMS ?? 4000);

interface Outcome { ok: boolean; globals: string[]; end?: number; error?: string }
interface Case { hex: string; modes: Record<string, Outcome> }
interface Ours { clean: boolean; globals: string[]; end: number; why: string }

const py = await requirePython(['_pickle', '_compat_pickle']);

/** Our scan of one stream, as scan.ts runs it. EXT's `copyreg.extension[n]` is our name for a lookup Python does not do by import. */
function scanned(bytes: Uint8Array): Ours {
  const r = runPickle(bytes, 0, { mode: 'scan', persistentLoad: new StorageTable('any').load });
  const bad = r.findings.find((f) => f.code !== 'PickleDisallowedGlobal');
  return {
    clean: r.value !== undefined && !r.truncated && bad === undefined,
    globals: r.globals.filter((g) => !g.startsWith('copyreg.extension[')),
    end: r.end,
    why: bad?.message ?? '',
  };
}

const isPrefix = (a: readonly string[], b: readonly string[]): boolean => a.length <= b.length && a.every((x, i) => x === b[i]);

/** Null when the two agree by the rule above, else what differs. */
function disagreement(ours: Ours, theirs: Outcome): string | null {
  const c = [...new Set(theirs.globals)];
  const t = ours.globals;
  if (!isPrefix(t, c) && !isPrefix(c, t)) return `globals differ: ours ${JSON.stringify(t)}, CPython ${JSON.stringify(c)}`;
  if (!ours.clean) return null;
  if (theirs.ok) {
    if (t.length !== c.length) return `we list ${JSON.stringify(t)}, CPython imported ${JSON.stringify(c)}`;
    if (theirs.end !== ours.end) return `STOP ends at ${ours.end} for us, ${theirs.end} for CPython`;
    return null;
  }
  return isPrefix(c, t) ? null : `CPython imported ${JSON.stringify(c)} before failing (${theirs.error}), we list ${JSON.stringify(t)}`;
}

describe.skipIf(!py)('differential: our scan and CPython’s C unpickler import the same globals', () => {
  let cases: Case[] = [];

  it(`${STREAMS} seeded streams agree in every way CPython reads them`, async () => {
    const out = await runPython(py!.exe, readFileSync(ORACLE, 'utf8'), { input: JSON.stringify({ seed: SEED, count: STREAMS }), timeout: 180_000 });
    cases = out.trim().split('\n').map((l) => JSON.parse(l) as Case);
    expect(cases).toHaveLength(STREAMS);
    const failures: string[] = [];
    let clean = 0, cleanWithGlobals = 0, readersDiffer = 0, refusedWhereAllSucceed = 0;
    for (const c of cases) {
      const bytes = Uint8Array.from(Buffer.from(c.hex, 'hex'));
      const ours = scanned(bytes);
      const outcomes = Object.values(c.modes);
      for (const [mode, theirs] of Object.entries(c.modes)) {
        const d = disagreement(ours, theirs);
        if (d) failures.push(`${c.hex} (${mode}): ${d}`);
      }
      if (ours.clean) clean++;
      if (ours.clean && ours.globals.length > 0) cleanWithGlobals++;
      const distinct = new Set(outcomes.map((o) => JSON.stringify([o.ok, [...new Set(o.globals)]])));
      if (distinct.size > 1) {
        readersDiffer++;
        // CPython itself reads the stream two ways: only a refusal can be right.
        if (ours.clean) failures.push(`${c.hex}: CPython's readers disagree, yet our scan is clean`);
      }
      if (!ours.clean && outcomes.every((o) => o.ok)) refusedWhereAllSucceed++;
    }
    console.log({ clean, cleanWithGlobals, readersDiffer, refusedWhereAllSucceed, failures: failures.length });
    expect(failures.slice(0, 10)).toEqual([]);
    // The corpus must exercise what it claims: well-formed streams with globals, streams that
    // CPython's own readers take differently (frame tricks), and not a blanket refusal.
    expect(cleanWithGlobals).toBeGreaterThan(STREAMS / 10);
    expect(clean).toBeGreaterThan(STREAMS / 5);
    expect(readersDiffer).toBeGreaterThan(STREAMS / 100);
    expect(refusedWhereAllSucceed).toBeLessThan(STREAMS / 5);
  }, 180_000);

  it('the Python 2 name tables are the running Python’s own', async () => {
    const out = await runPython(py!.exe, 'import _compat_pickle as c, json; print(json.dumps([c.IMPORT_MAPPING, [[*k, *v] for k, v in c.NAME_MAPPING.items()]]))');
    const [imports, names] = JSON.parse(out) as [Record<string, string>, [string, string, string, string][]];
    expect(Object.fromEntries(PY2_IMPORTS)).toEqual(imports);
    expect(new Map(names.map(([m, n, m2, n2]) => [`${m} ${n}`, [m2, n2]]))).toEqual(PY2_NAMES);
  });
});
