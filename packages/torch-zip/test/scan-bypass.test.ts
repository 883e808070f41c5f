import { fileURLToPath } from 'node:url';
import { BytesSource } from '@tensorport/core';
import { nodeZlibCodec } from '@tensorport/core/node';
import { openNpy, openNpz } from '@tensorport/npz';
import { describe, expect, it } from 'vitest';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { openTorchCheckpoint, scanCheckpoint, type ScanReport } from '../src/index.ts';
import { readBytes } from './helpers/paths.ts';

/**
 * Issue 10 items 2–7 and issue 11 item 7: files the real loaders unpickle (fixtures/scan-bypass/,
 * written by its generate.py with torch and numpy) must scan unsafe, naming why, and be refused by
 * the readers; files with no pickle get the verdict `no-pickle`.
 */
const DIR = fileURLToPath(new URL('../../../fixtures/scan-bypass/', import.meta.url));
const scan = (f: string): Promise<ScanReport> => scanCheckpoint(readBytes(DIR + f), { path: f, zipCodec: nodeZlibCodec });
const messages = (r: ScanReport): string => r.findings.map((f) => `${f.code}: ${f.message}`).join('\n');

/** file → [finding code, message pattern, global the report must list (null: none expected)] */
const UNSAFE: Record<string, [string, RegExp, string | null]> = {
  'eocd-comment-hijack.pt': ['ZipAmbiguousEndRecord', /another end record signature at \d+ follows the end record/, null],
  'legacy-tar-polyglot.pt': ['TorchUnsupportedArchive', /tar header, so torch\.load reads it with the pre-0\.4 tar loader/, 'builtins.print'],
  'upper-data-pkl.pt': ['PickleDisallowedGlobal', /global builtins\.print is not allowed/, 'builtins.print'],
  'case-duplicate.pt': ['ZipDuplicateName', /"x\/data\.pkl" and "x\/DATA\.PKL" are one name to torch/, 'builtins.print'],
  'object-x4f.npy': ['PickleDisallowedGlobal', /builtins\.print/, 'builtins.print'],
  'object-u004f.npy': ['PickleDisallowedGlobal', /builtins\.print/, 'builtins.print'],
  'object-object.npy': ['PickleDisallowedGlobal', /builtins\.print/, 'builtins.print'],
  'object-O8.npy': ['PickleDisallowedGlobal', /builtins\.print/, 'builtins.print'],
  // npz's literal parser does not join adjacent literals; numpy's does: not vouched for
  'object-adjacent.npy': ['NpyInvalidHeader', /numpy's literal_eval may, and then unpickle/, null],
  'npz-object-spelling.npz': ['NpyInvalidHeader', /o\.npy: \.npy header is not a literal tensorport can parse/, null],
  'npz-data-0.npz': ['PickleDisallowedGlobal', /global builtins\.print is not allowed/, 'builtins.print'],
  'torchscript.pt': ['TorchUnsupportedArchive', /TorchScript archive \(.*constants\.pkl\): torch\.load hands/, null],
  'torchscript-polyglot.pt': ['TorchUnsupportedArchive', /TorchScript archive \(archive\/constants\.pkl\)/, null],
  'legacy-then-zip.pt': ['TorchInvalidCheckpoint', /bytes after the last storage \(a ZIP archive, scanned\)/, 'builtins.exec'],
};

describe('scanner bypasses (issue 10 items 2–7)', () => {
  for (const [file, [code, message, global]] of Object.entries(UNSAFE)) {
    it(`${file}: unsafe, ${code}`, async () => {
      const r = await scan(file);
      expect(r.safe).toBe(false);
      expect(r.verdict).toBe('unsafe');
      expect(r.findings.map((f) => f.code)).toContain(code);
      expect(messages(r)).toMatch(message);
      if (global !== null) expect(r.globals).toContain(global);
    });
  }

  it('the torch readers refuse every torch file, naming why', async () => {
    const want: Record<string, RegExp> = {
      'eocd-comment-hijack.pt': /ZipAmbiguousEndRecord/,
      'legacy-tar-polyglot.pt': /TorchUnsupportedArchive: .*tar/,
      'upper-data-pkl.pt': /PickleDisallowedGlobal: .*builtins\.print/,
      'case-duplicate.pt': /ZipDuplicateName: .*ignoring case/,
      'torchscript.pt': /TorchUnsupportedArchive: .*TorchScript/,
      'torchscript-polyglot.pt': /TorchUnsupportedArchive: .*TorchScript/,
      'legacy-then-zip.pt': /TorchInvalidCheckpoint: .*bytes after the last storage/,
    };
    for (const [file, re] of Object.entries(want)) {
      const err = await openTorchCheckpoint(new BytesSource(readBytes(DIR + file), file), { zipCodec: nodeZlibCodec }).then(
        () => null,
        (e: Error & { code?: string }) => `${e.code}: ${e.message}`,
      );
      expect(err, file).toMatch(re);
    }
  });

  it('the npz readers refuse the object arrays', async () => {
    for (const f of ['object-x4f.npy', 'object-u004f.npy', 'object-object.npy', 'object-O8.npy', 'object-adjacent.npy']) {
      await expect(openNpy(new BytesSource(readBytes(DIR + f), f), {}), f).rejects.toMatchObject({ code: expect.stringMatching(/^Npy(UnsupportedDtype|InvalidHeader)$/) });
    }
    for (const f of ['npz-data-0.npz', 'npz-object-spelling.npz']) {
      const refused = await openNpz(new BytesSource(readBytes(DIR + f), f), { codec: nodeZlibCodec }).then(
        async (c) => {
          try {
            for await (const t of c.tensors) void t;
            return false;
          } catch {
            return true;
          }
        },
        () => true,
      );
      expect(refused, f).toBe(true);
    }
  });

  it('an npz member named data/0 is scanned; a torch storage data/0 is not read as a pickle', async () => {
    const npz = await scan('npz-data-0.npz');
    expect(npz.findings.map((f) => f.path)).toContain('data/0');
    for (const f of ['simple_state_dict.pt', 'many_storages.bin', 'legacy_format.pt', 'shared_views.pt']) {
      const r = await scanCheckpoint(readBytes(`${DIR}../torch/reference/${f}`), { path: f, zipCodec: nodeZlibCodec });
      expect(r, `${f}: ${messages(r)}`).toMatchObject({ verdict: 'safe', safe: true });
      expect(r.pickles).toBeGreaterThan(0);
    }
  });
});

describe('files with no pickle (issue 11 item 7)', () => {
  it('an empty file: no-pickle; random bytes: not-a-pickle (nothing to vouch for), never "unsafe"', async () => {
    expect(await scan('empty.bin')).toMatchObject({ verdict: 'no-pickle', safe: true, pickles: 0, findings: [] });
    const r = await scan('random.bin');
    expect(r).toMatchObject({ verdict: 'not-a-pickle', safe: false, pickles: 0, globals: [] });
    expect(r.findings).toHaveLength(1);
  });
  // GGUF is named by the gguf package's identifier, which the library hands the scan
  // (packages/tensorport/test/scan-no-pickle.test.ts); alone, torch-zip knows its own kinds and core's
  it('safetensors, HDF5 and ONNX files: no-pickle', async () => {
    const fixtures = fileURLToPath(new URL('../../../fixtures/', import.meta.url));
    const { readdirSync } = await import('node:fs');
    const pick = (dir: string, re: RegExp): string[] => readdirSync(fixtures + dir).filter((f) => re.test(f)).slice(0, 3).map((f) => `${fixtures}${dir}/${f}`);
    const files = [...pick('safetensors', /\.safetensors$/), ...pick('identify', /\.(h5|onnx|safetensors|bin)$/)];
    expect(files.length).toBeGreaterThanOrEqual(6);
    for (const f of files) {
      const r = await scanCheckpoint(readBytes(f), { path: f, zipCodec: nodeZlibCodec });
      expect(r.verdict, `${f}: ${messages(r)}`).toBe('no-pickle');
    }
  });
});

const py = await requirePython(['torch', 'numpy']);

/** Loads each file with the real loader, capturing stdout: the markers the payloads print. */
const LOAD = `
import sys, io, contextlib, json, warnings, torch, numpy as np
out = {}
for f in sys.argv[1:]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            if f.endswith('.npy'):
                np.load(f, allow_pickle=True)
            elif f.endswith('.npz'):
                z = np.load(f, allow_pickle=True)
                for k in z.files: z[k]
            else:
                # torch >= 2.6 defaults to weights_only=True; the issue is about the unsafe load
                kw = {'weights_only': False} if 'weights_only' in torch.load.__code__.co_varnames else {}
                torch.load(f, map_location='cpu', **kw)
        except Exception as e:
            pass
    out[f.rsplit('/', 1)[1]] = [buf.getvalue(), [str(x.message) for x in w]]
print(json.dumps(out))
`;

describe.skipIf(!py)('the real loaders run these files (torch.load, np.load(allow_pickle=True))', () => {
  it('each payload prints its marker, or torch dispatches to torch.jit.load', async () => {
    const files = Object.keys(UNSAFE).map((f) => DIR + f);
    const got = JSON.parse(await runPython(py!.exe, LOAD, { args: files })) as Record<string, [string, string[]]>;
    const printed: Record<string, string> = {
      'eocd-comment-hijack.pt': 'tensorport-bypass-2-eocd', // torch (miniz) read the directory in the comment
      'legacy-tar-polyglot.pt': 'tensorport-bypass-3-tar',
      'upper-data-pkl.pt': 'tensorport-bypass-4-upper',
      'object-x4f.npy': 'tensorport-bypass-5-x4f',
      'object-u004f.npy': 'tensorport-bypass-5-u004f',
      'object-object.npy': 'tensorport-bypass-5-object',
      'object-O8.npy': 'tensorport-bypass-5-O8',
      'object-adjacent.npy': 'tensorport-bypass-5-adjacent',
      'npz-data-0.npz': 'tensorport-bypass-5-data0',
      'npz-object-spelling.npz': 'tensorport-bypass-5-npz',
    };
    for (const [f, marker] of Object.entries(printed)) expect(got[f]![0], f).toContain(marker);
    for (const f of ['torchscript.pt', 'torchscript-polyglot.pt']) expect(got[f]![1].join('\n'), f).toMatch(/dispatching to 'torch\.jit\.load'/);
    // torch reads the legacy part and ignores the appended ZIP; zipfile opens the ZIP (checked below)
    expect(got['legacy-then-zip.pt']![0]).toBe('');
  }, 180_000);

  it('zipfile reads the hijack fixture\'s second directory and the ZIP appended to the legacy stream', async () => {
    const out = await runPython(py!.exe, `
import sys, zipfile
for f in sys.argv[1:]:
    print(zipfile.ZipFile(f).namelist()[0])
`, { args: [`${DIR}eocd-comment-hijack.pt`, `${DIR}legacy-then-zip.pt`] });
    expect(out.trim().split('\n')).toEqual([expect.stringMatching(/^evil\//), 'archive/data.pkl']);
  });
});
