import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { main } from '../src/program.ts';
import { VERSION } from '../src/version.ts';
import { FIXTURES, tensorport } from './helpers.ts';

const here = dirname(fileURLToPath(import.meta.url));

const minimal = join(FIXTURES, 'minimal.safetensors');

describe('--help', () => {
  for (const command of ['inspect', 'validate', 'convert']) {
    it(`tensorport ${command} --help prints usage and examples, exit 0`, async () => {
      const r = await tensorport(command, '--help');
      expect(r.code).toBe(0);
      expect(r.stderr).toBe('');
      expect(r.stdout).toContain(`Usage: tensorport ${command} [options]`);
      expect(r.stdout).toMatch(/Examples:\n\s+\$ tensorport /);
      const viaHelp = await tensorport('help', command);
      expect(viaHelp.code).toBe(0);
      expect(viaHelp.stdout).toBe(r.stdout);
    });
  }

  it('the top-level help lists every command and the exit codes', async () => {
    const r = await tensorport('--help');
    expect(r.code).toBe(0);
    for (const c of ['inspect', 'validate', 'convert']) expect(r.stdout).toMatch(new RegExp(`^  ${c} `, 'm'));
    expect(r.stdout).toContain('Exit codes: 0 success, 1 invalid input or failed conversion, 2 usage error.');
  });

  it('--version and -V print the package version, the one the program reports too', async () => {
    const { version } = JSON.parse(await readFile(join(here, '../package.json'), 'utf8')) as { version: string };
    expect(version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(VERSION).toBe(version);
    for (const flag of ['--version', '-V']) {
      const r = await tensorport(flag);
      expect(r).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
    }
    // Not alone, the flag goes through the program (the bin's short cut answers only the lone flag).
    const lines: string[] = [];
    const code = await main(['-V', '--version'], { stdout: { write: (t: string) => lines.push(t) }, stderr: process.stderr });
    expect({ code, out: lines.join('') }).toEqual({ code: 0, out: `${version}\n` });
  });
});

describe('usage errors exit 2 with one line on stderr', () => {
  const cases: Array<[string, string[], RegExp]> = [
    ['no command', [], /Usage: tensorport/],
    ['unknown command', ['frobnicate'], /^tensorport: usage: unknown command 'frobnicate'/],
    ['unknown option', ['inspect', minimal, '--jsno'], /^tensorport: usage: unknown option '--jsno'.*--json/],
    ['missing argument', ['convert', minimal], /^tensorport: usage: missing required argument 'output'/],
    ['extra argument', ['validate', minimal, minimal], /^tensorport: usage: too many arguments/],
    ['bad --dtype', ['convert', minimal, 'out.safetensors', '--dtype', 'f8'], /^tensorport: usage: .*'--dtype <dtype>' argument 'f8' is invalid/],
    ['bad --max-shard-size', ['convert', minimal, 'out/', '--max-shard-size', 'lots'], /^tensorport: usage: .*'--max-shard-size <size>' argument 'lots' is invalid/],
    ['--max-shard-size in bits', ['convert', minimal, 'out/', '--max-shard-size', '5Gb'], /^tensorport: usage: .*lowercase 'b' means bits.*write 5GB/],
    ['zero --max-shard-size', ['convert', minimal, 'out/', '--max-shard-size', '0'], /^tensorport: usage: /],
    ['a fraction of a byte as --max-shard-size', ['convert', minimal, 'out/', '--max-shard-size', '1.5'], /^tensorport: usage: .*1\.5 is not a whole number of bytes/],
    ['--max-shard-size 1.0001KB (1000.1 bytes)', ['convert', minimal, 'out/', '--max-shard-size', '1.0001KB'], /not a whole number of bytes/],
  ];
  for (const [what, args, pattern] of cases) {
    it(what, async () => {
      const r = await tensorport(...args);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      if (args.length > 0) expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(pattern);
    });
  }
});
