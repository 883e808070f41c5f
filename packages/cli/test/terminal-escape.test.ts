/**
 * Untrusted text never reaches the terminal raw (issue 10 item 11): tensor names, metadata, npy
 * header text, pickle global names and the errors quoting them are escaped in human output
 * (`\x1b`, `\n`, `\u202e`…), while --json keeps the exact strings. Through the built CLI.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { escapeTerminal } from '../src/report.ts';
import { tempDir, tensorport } from './helpers.ts';

/** Anything a terminal acts on: C0 except the line structure's own LF, DEL, C1, bidi controls, U+2028/9. */
const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
const NASTY = ['a\u001b[31mred', 'b\r\ntensorport: forged', 'c\u0007bell', 'd\u202eevil\u2066x', 'e\u009bcsi', 'f\u001b]8;;http://x\u001b\\link', 'g\u0000nul\u007f'];

function safetensors(names: string[], metadata: Record<string, string>): Uint8Array {
  const header: Record<string, unknown> = { __metadata__: metadata };
  names.forEach((n, i) => (header[n] = { dtype: 'F32', shape: [1], data_offsets: [i * 4, i * 4 + 4] }));
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (Buffer.byteLength(json) % 8)) % 8);
  const h = Buffer.from(json);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(h.byteLength));
  return Buffer.concat([len, h, Buffer.alloc(names.length * 4)]);
}

/** Lines must not be forged and nothing raw may remain. */
function expectClean(text: string): void {
  expect(text).not.toMatch(RAW);
  expect(text.split('\n').some((l) => l.startsWith('tensorport: forged'))).toBe(false);
}

describe('escapeTerminal', () => {
  it('escapes C0, DEL, C1, bidi and line separators visibly and leaves other text alone', () => {
    expect(escapeTerminal('a\u001b[2Jb')).toBe('a\\x1b[2Jb');
    expect(escapeTerminal('x\r\ny\tz')).toBe('x\\r\\ny\\tz');
    expect(escapeTerminal('\u0007\u0000\u007f\u0085\u009b')).toBe('\\x07\\x00\\x7f\\x85\\x9b');
    expect(escapeTerminal('\u202e\u2066\u200f\u061c\u2028')).toBe('\\u202e\\u2066\\u200f\\u061c\\u2028');
    expect(escapeTerminal('model.layers.0 — Ünïcødé 模型 🙂')).toBe('model.layers.0 — Ünïcødé 模型 🙂');
  });
});

describe('human output escapes, --json keeps the exact strings', () => {
  it('inspect: tensor names and metadata', async () => {
    const d = await tempDir();
    const f = join(d, 'names.safetensors');
    await writeFile(f, safetensors(NASTY, { 'k\u001b]0;title\u0007': 'v\nw' }));
    const r = await tensorport('inspect', f);
    expect(r.code).toBe(0);
    expectClean(r.stdout);
    for (const n of NASTY) expect(r.stdout).toContain(escapeTerminal(n));
    expect(r.stdout).toContain('k\\x1b]0;title\\x07  v\\nw');
    const other = join(d, 'other.safetensors');
    await writeFile(other, safetensors(['plain'], {}));
    const diff = await tensorport('diff', f, other);
    expectClean(diff.stdout);
    expect(diff.stdout).toContain(`only in a  ${escapeTerminal(NASTY[1]!)}`);
    const j = await tensorport('inspect', f, '--json');
    const names = (JSON.parse(j.stdout) as { tensors: Array<{ name: string }> }).tensors.map((t) => t.name);
    expect(names.sort()).toEqual([...NASTY].sort());
  });

  it('scan: global names of a pickle (STACK_GLOBAL with ESC, LF, bidi)', async () => {
    const d = await tempDir();
    const f = join(d, 'g.pkl');
    const str = (s: string) => {
      const b = Buffer.from(s, 'utf8');
      return Buffer.concat([Buffer.from([0x8c, b.byteLength]), b]);
    };
    // PROTO 4, SHORT_BINUNICODE module, SHORT_BINUNICODE name, STACK_GLOBAL, STOP
    await writeFile(f, Buffer.concat([Buffer.from([0x80, 0x04]), str('os\u001b[2J'), str('system\ntensorport: forged\u202e'), Buffer.from([0x93, 0x2e])]));
    const r = await tensorport('scan', f);
    expect(r.code).toBe(1);
    expectClean(r.stdout);
    expectClean(r.stderr);
    expect(r.stdout).toContain('DISALLOWED global os\\x1b[2J.system\\ntensorport: forged\\u202e');
    const j = JSON.parse((await tensorport('scan', f, '--json')).stdout) as { globals: string[] };
    expect(j.globals).toEqual(['os\u001b[2J.system\ntensorport: forged\u202e']);
  });

  it('errors quoting npy header text and file names', async () => {
    const d = await tempDir();
    const npy = async (name: string, descr: string) => {
      const header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (1,), }`;
      const padded = header + ' '.repeat(64 - ((10 + header.length + 1) % 64)) + '\n';
      const len = Buffer.alloc(2);
      len.writeUInt16LE(Buffer.byteLength(padded, 'latin1'));
      await writeFile(join(d, name), Buffer.concat([Buffer.from('\u0093NUMPY\u0001\u0000', 'latin1'), len, Buffer.from(padded, 'latin1'), Buffer.alloc(4)]));
      return join(d, name);
    };
    const files = [await npy('bad\u001b[31m\r\ntensorport: forged.npy', '\u001b]0;pwned\u0007<f4\u0085'), await npy('crlf.npy', '<f4\r\ntensorport: forged')];
    const runs = [['validate', files[0]!], ['convert', files[0]!, join(d, 'out.safetensors')], ['inspect', files[1]!]];
    const results = await Promise.all(runs.map((args) => tensorport(...args)));
    results.forEach((r, i) => {
      expect(r.code, runs[i]!.join(' ')).not.toBe(0);
      expectClean(r.stdout);
      expectClean(r.stderr);
    });
    expect(results[0]!.stdout).toContain('bad\\x1b[31m\\r\\ntensorport: forged.npy');
    expect(results[1]!.stderr).toContain('bad\\x1b[31m\\r\\ntensorport: forged');
  });

  it('usage errors echo the argument escaped', async () => {
    const r = await tensorport('inspect', '--bogus\u001b[2J\ntensorport: forged');
    expect(r.code).toBe(2);
    expectClean(r.stderr);
  });
});
