import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BytesSource, TensorportError, crc32, openZip } from '../src/index.ts';
import { rng } from '../../mlx/test/helpers/random.ts';
import { requirePython, runPython } from './helpers/python.ts';

/**
 * Which central directory does a reader use when the tail holds several end record signatures?
 * Generated archives carry two directories over the same file: one names `a/version`, `a/x`, the
 * other `b/version`, `b/x` (different bytes), and end records, real and fake, point at either one.
 * Oracles: torch's own reader (miniz, `torch._C.PyTorchFileReader`, what torch.load opens) and
 * CPython's zipfile (what np.load opens). Whenever our reader accepts an archive, it must read the
 * directory both of them read; otherwise it must refuse.
 */
const py = await requirePython(['torch']);

const enc = new TextEncoder();
const u16 = (v: number) => [v & 0xff, (v >>> 8) & 0xff];
const u32 = (v: number) => [v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, (v >>> 24) & 0xff];

interface Member { name: string; data: Uint8Array; at: number }

function local(name: string, data: Uint8Array): number[] {
  const n = enc.encode(name);
  return [...u32(0x04034b50), ...u16(20), ...u16(0), ...u16(0), ...u16(0), ...u16(0x21), ...u32(crc32(data)), ...u32(data.byteLength), ...u32(data.byteLength), ...u16(n.byteLength), ...u16(0), ...n, ...data];
}
function central(m: Member): number[] {
  const n = enc.encode(m.name);
  return [...u32(0x02014b50), ...u16(20), ...u16(20), ...u16(0), ...u16(0), ...u16(0), ...u16(0x21), ...u32(crc32(m.data)), ...u32(m.data.byteLength), ...u32(m.data.byteLength), ...u16(n.byteLength), ...u16(0), ...u16(0), ...u16(0), ...u16(0), ...u32(0), ...u32(m.at), ...n];
}
function eocd(entries: number, cdSize: number, cdOffset: number, commentLength: number): number[] {
  return [...u32(0x06054b50), ...u16(0), ...u16(0), ...u16(entries), ...u16(entries), ...u32(cdSize), ...u32(cdOffset), ...u16(commentLength)];
}

/**
 * One archive: the members of both directories, then the directory the real end record does not
 * name, then the one it names (ending right before it), then a tail of end records and junk. A fake
 * record in the tail may have a copy of its directory right before it, as zipfile wants.
 */
function generate(seed: number): { bytes: Uint8Array; kind: string; named: string } {
  const r = rng(seed);
  const int = (n: number) => Math.floor(r() * n);
  const junk = (n: number) => Array.from({ length: n }, () => int(256));
  const body: number[] = [];
  const members: Member[] = [];
  for (const [name, text] of [['a/version', '3\n'], ['a/x', 'AAAA'], ['b/version', '3\n'], ['b/x', 'BBBB']] as const) {
    const data = enc.encode(text);
    members.push({ name, data, at: body.length });
    body.push(...local(name, data));
  }
  const first = r() < 0.5 ? 'a' : 'b';
  const second = first === 'a' ? 'b' : 'a';
  const cd = { a: members.slice(0, 2).flatMap(central), b: members.slice(2).flatMap(central) };
  const kinds = ['fake-in-comment', 'fake-at-end', 'fake-in-last-21', 'two-exact', 'gap', 'plain', 'fake-before'] as const;
  const kind = kinds[int(kinds.length)]!;
  // a stray record inside the data, before every directory: harmless for every reader
  if (kind === 'fake-before') body.push(...eocd(2, cd[second].length, body.length + 22, int(50)), ...junk(int(10)));
  const offSecond = body.length;
  body.push(...cd[second]);
  const offFirst = body.length;
  body.push(...cd[first]);
  const real = (commentLength: number) => eocd(2, cd[first].length, offFirst, commentLength);
  const commentAt = body.length + 22;
  /** A fake record for `second`, at comment offset `at`, optionally with its directory copied before it. */
  const fake = (at: number, commentLength: number, copy: boolean): number[] =>
    copy ? [...cd[second], ...eocd(2, cd[second].length, commentAt + at, commentLength)] : eocd(2, cd[second].length, offSecond, commentLength);
  let comment: number[];
  switch (kind) {
    case 'fake-in-comment': { // the real record's comment holds a fake with any comment length
      const before = junk(int(40));
      const after = junk(int(60));
      const f = fake(before.length, r() < 0.3 ? after.length + 1 : int(0x10000), r() < 0.5);
      comment = [...before, ...f, ...after];
      break;
    }
    case 'fake-at-end': { // a fake with comment length 0 as the last 22 bytes (zipfile's fast path)
      const before = junk(int(30));
      comment = [...before, ...fake(before.length, 0, r() < 0.7)];
      break;
    }
    case 'fake-in-last-21': { // a signature too close to the end for a record: miniz skips it, zipfile gives up
      comment = [...junk(int(10)), ...eocd(2, 0, 0, 0).slice(0, 4 + int(17))];
      break;
    }
    case 'two-exact': { // both records' comments end at the end of the file
      const before = junk(int(20));
      const inner = junk(int(20));
      comment = [...before, ...fake(before.length, inner.length, r() < 0.7), ...inner];
      break;
    }
    case 'gap': { // junk between the directory and its end record: zipfile would look for it elsewhere
      body.push(...cd[second].slice(0, 8 + int(cd[second].length - 8)));
      comment = junk(int(30));
      break;
    }
    default:
      comment = junk(int(30));
  }
  return { bytes: new Uint8Array([...body, ...real(comment.length), ...comment]), kind, named: first };
}

/** 'a', 'b' (the directory read) or 'refused'. */
async function ours(bytes: Uint8Array): Promise<string> {
  try {
    const z = await openZip(new BytesSource(bytes));
    return z.entries[0]!.name.slice(0, 1);
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
    return 'refused';
  }
}

const ORACLES = `
import sys, json, zipfile, torch
out = []
for path in sys.argv[1:]:
    try:
        z = torch._C.PyTorchFileReader(path)
        t = {b'AAAA': 'a', b'BBBB': 'b'}.get(bytes(z.get_record('x')), 'other')
    except Exception as e:
        t = 'error'
    try:
        with zipfile.ZipFile(path) as z:
            n = z.namelist()[0][0]
    except Exception:
        n = 'error'
    out.append([t, n])
print(json.dumps(out))
`;

const dir = mkdtempSync(join(tmpdir(), 'tp-eocd-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(!py)('end record choice against torch (miniz) and zipfile', () => {
  it('agrees with both readers on 600 generated archives, or refuses', async () => {
    const cases = Array.from({ length: 600 }, (_, i) => generate(i + 1));
    const paths = cases.map((c, i) => {
      const p = join(dir, `${i}.zip`);
      writeFileSync(p, c.bytes);
      return p;
    });
    const oracle = JSON.parse(await runPython(py!.exe, ORACLES, { args: paths, timeout: 180_000 })) as Array<[string, string]>;
    const disagreements: string[] = [];
    const tally: Record<string, number> = {};
    for (let i = 0; i < cases.length; i++) {
      const mine = await ours(cases[i]!.bytes);
      const [torch, zf] = oracle[i]!;
      // the attack the old rule (the record whose comment ends at the end of the file) let through
      const hijacked = torch !== cases[i]!.named && torch !== 'error';
      const key = `${cases[i]!.kind}:${mine}/${hijacked ? 'hijacked' : torch}/${zf}`;
      tally[key] = (tally[key] ?? 0) + 1;
      if (mine !== 'refused' && (torch !== mine || (zf !== mine && zf !== 'error'))) disagreements.push(`${i} ${key}`);
    }
    expect(disagreements).toEqual([]);
    // not vacuous: torch really is sent to the other directory in some archives we refuse, and
    // ordinary archives are still read
    const sum = (re: RegExp) => Object.entries(tally).filter(([k]) => re.test(k)).reduce((s, [, n]) => s + n, 0);
    expect(sum(/^fake-in-comment:refused\/hijacked\//)).toBeGreaterThan(25);
    expect(sum(/^fake-in-comment:refused\/hijacked\/(a|b)$/)).toBeGreaterThan(5);
    expect(sum(/^(plain|fake-before|fake-at-end|two-exact|fake-in-last-21):(a|b)\//)).toBeGreaterThan(200);
    expect(sum(/^gap:refused\//)).toBeGreaterThan(25);
  }, 180_000);
});

describe('end records a reader could choose differently', () => {
  it('refuses a fake record in the comment, naming where it is', async () => {
    for (let seed = 1; seed < 200; seed++) {
      const c = generate(seed);
      if (c.kind !== 'fake-in-comment') continue;
      await expect(openZip(new BytesSource(c.bytes))).rejects.toMatchObject({ code: 'ZipAmbiguousEndRecord' });
    }
  });
  it('refuses a directory that does not end at its end record', async () => {
    let n = 0;
    for (let seed = 1; seed < 200; seed++) {
      const c = generate(seed);
      if (c.kind !== 'gap') continue;
      n++;
      await expect(openZip(new BytesSource(c.bytes))).rejects.toMatchObject({ code: 'ZipInvalidCentralDirectory', message: /zipfile would read a directory at/ });
    }
    expect(n).toBeGreaterThan(10);
  });
});
