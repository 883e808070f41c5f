import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO, tempDir, tensorport } from './helpers.ts';

/**
 * Issue 10 items 2–7 through the built CLI: `scan` says UNSAFE with the finding, `convert` refuses
 * before writing anything. Issue 11 item 7: files without pickles are "no pickle found", exit 0.
 * The fixtures are fixtures/scan-bypass/ (generate.py, torch and numpy).
 */
const DIR = join(REPO, 'fixtures/scan-bypass');

const CASES: Array<[string, RegExp]> = [
  ['eocd-comment-hijack.pt', /ZipAmbiguousEndRecord/],
  ['legacy-tar-polyglot.pt', /TorchUnsupportedArchive: .*tar header/],
  ['upper-data-pkl.pt', /DISALLOWED global builtins\.print/],
  ['case-duplicate.pt', /ZipDuplicateName: .*ignoring case/],
  ['object-x4f.npy', /DISALLOWED global builtins\.print/],
  ['npz-data-0.npz', /DISALLOWED global builtins\.print/],
  ['torchscript-polyglot.pt', /TorchUnsupportedArchive: .*TorchScript/],
  ['legacy-then-zip.pt', /DISALLOWED global builtins\.exec[\s\S]*after the last storage/],
];

describe('tensorport scan and convert on the scanner bypasses', () => {
  it.each(CASES)('%s: scan UNSAFE naming the finding, convert refuses', async (file, finding) => {
    const s = await tensorport('scan', join(DIR, file));
    expect(s.code).toBe(1);
    expect(s.stdout).toMatch(finding);
    expect(s.stdout).toMatch(/: UNSAFE \(/);
    const out = join(await tempDir(), 'out.safetensors');
    const c = await tensorport('convert', join(DIR, file), out);
    expect(c.code).toBe(1);
    expect(c.stderr).toMatch(/unsafe|Unsupported|Invalid|Duplicate|Ambiguous|Npy/i);
    expect(existsSync(out)).toBe(false);
  });

  it('files without pickles: "no pickle found", exit 0; unrecognised bytes: "not a pickle", exit 1', async () => {
    const empty = await tensorport('scan', join(DIR, 'empty.bin'));
    expect(empty).toMatchObject({ code: 0 });
    expect(empty.stdout).toMatch(/empty\.bin: no pickle found/);
    const st = await tensorport('scan', join(REPO, 'fixtures/safetensors/minimal.safetensors'), '--json');
    expect(st.code).toBe(0);
    expect(JSON.parse(st.stdout)).toMatchObject({ verdict: 'no-pickle', kind: 'safetensors', safe: true, findings: [] });
    const gguf = await tensorport('scan', join(REPO, 'fixtures/gguf/tiny.gguf'));
    expect(gguf.code).toBe(0);
    expect(gguf.stdout).toMatch(/no pickle found \(gguf\)/);
    const random = await tensorport('scan', join(DIR, 'random.bin'));
    expect(random.code).toBe(1);
    expect(random.stdout).toMatch(/random\.bin: not a pickle/);
    expect(random.stdout).not.toMatch(/UNSAFE/);
    const ts = await tensorport('scan', join(DIR, 'torchscript.pt'));
    expect(ts.code).toBe(1);
    expect(ts.stdout).toMatch(/UNSAFE/);
  });
});
