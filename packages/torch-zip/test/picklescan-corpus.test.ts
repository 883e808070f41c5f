import { readdirSync, readFileSync } from 'node:fs';
import { nodeZlibCodec } from '@tensorport/core/node';
import { describe, expect, it } from 'vitest';
import { scanCheckpoint } from '../src/index.ts';
import { PICKLESCAN, readBytes } from './helpers/paths.ts';

/**
 * picklescan's test fixtures (MIT, fixtures/torch/picklescan): its README names which must be
 * judged unsafe, which are benign, and which are malformed. Our verdict comes from interpreting the
 * pickle against the allowlist, not from its denylist, so each file is also checked for the reason.
 */
const files = ['data', 'data2'].flatMap((d) => readdirSync(`${PICKLESCAN}${d}`).map((f) => `${d}/${f}`));
const base = (f: string): string => f.slice(f.indexOf('/') + 1);

const MALFORMED = new Set(['broken_model.pkl', 'not_a_pickle.bin', 'malicious-invalid-bytes.pkl']);
const BENIGN = /^(benign|pytorch_model\.bin|new_pytorch_model\.bin|int_array)/;
const UNSAFE = /^(malicious|GHSA-|bad_pytorch\.pt|pytorch_magic_bypass\.pt|sys_module_override_sploit\.pkl|cloudpickle_codeinjection\.pkl|io_FileIO\.pkl|keyerror-exploit\.pkl|logging_FileHandler\.pkl|dns_exfiltration\.npy|types_CodeType\.pkl|urllib_request_urlopen\.pkl|type-confusion-exploit\.pkl)/;

/** Benign files we cannot call safe, and exactly why. */
const BENIGN_EXPLAINED: Record<string, RegExp> = {
  // a password-protected archive: its member cannot be read, so it cannot be vouched for
  'benign_password_protected.zip': /encrypted/i,
};

describe('picklescan corpus', () => {
  it('covers the whole corpus', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(readFileSync(`${PICKLESCAN}LICENSE`, 'utf8')).toMatch(/MIT/);
  });
  for (const f of files.filter((x) => !x.endsWith('LICENSE') && !x.endsWith('.md'))) {
    const name = base(f);
    it(name, async () => {
      const r = await scanCheckpoint(readBytes(`${PICKLESCAN}${f}`), { path: name, zipCodec: nodeZlibCodec });
      if (MALFORMED.has(name) || (UNSAFE.test(name) && !BENIGN.test(name))) {
        expect(r.safe).toBe(false);
        expect(r.findings.length).toBeGreaterThan(0);
      } else if (name in BENIGN_EXPLAINED) {
        expect(r.safe).toBe(false);
        expect(r.findings.map((x) => x.message).join('\n')).toMatch(BENIGN_EXPLAINED[name]!);
      } else if (BENIGN.test(name)) {
        expect(r.findings).toEqual([]);
        expect(r.safe).toBe(true);
      } else {
        // object arrays (.npy/.npz) pickle numpy globals, which a torch allowlist does not admit
        expect(name).toMatch(/^object_array/);
        expect(r.safe).toBe(false);
        expect(r.globals).toContain('numpy.core.multiarray._reconstruct');
        expect(r.findings.every((x) => x.code === 'PickleDisallowedGlobal')).toBe(true);
      }
    });
  }
  it('names the payload of the evasions a static scanner misses', async () => {
    const cases: Array<[string, string]> = [
      ['data/malicious11.pkl', 'os.system'], // STACK_GLOBAL operands from the memo
      ['data2/keyerror-exploit.pkl', 'os.system'],
      ['data2/type-confusion-exploit.pkl', 'os.system'],
      ['data/malicious6.pkl', 'requests.api.get'], // two pickles in one file
      ['data/pytorch_magic_bypass.pt', 'builtins.eval'], // legacy magic number made by eval
      ['data/malicious1_wrong_ext.zip', 'builtins.eval'], // a pickle under another name
      ['data2/malicious1_crc.zip', 'builtins.eval'],
    ];
    for (const [f, g] of cases) {
      const r = await scanCheckpoint(readBytes(`${PICKLESCAN}${f}`), { path: f });
      expect(r.globals, f).toContain(g);
    }
  });
  it('refuses an archive whose local header and central directory disagree', async () => {
    const r = await scanCheckpoint(readBytes(`${PICKLESCAN}data/malicious1_central_directory.zip`));
    expect(r.safe).toBe(false);
    expect(r.findings.map((x) => x.code)).toEqual(['ZipLocalHeaderMismatch']);
  });
});
