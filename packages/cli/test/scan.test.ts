import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO, tensorport } from './helpers.ts';

const MALICIOUS = join(REPO, 'fixtures/torch/malicious');
const CHECKPOINTS = join(REPO, 'fixtures/torch/checkpoints');
const REFERENCE = join(REPO, 'fixtures/torch/reference');

/** What the Python generator recorded for each hostile pickle: its globals and whether loading fails. */
const manifest = JSON.parse(await readFile(join(MALICIOUS, 'manifest.json'), 'utf8')) as Record<string, { globals: string[]; loadError: string | null }>;

interface ScanJson {
  safe: boolean;
  globals: string[];
  verdicts: Array<{ global: string; allowed: boolean }>;
  findings: Array<{ code: string; message: string }>;
}

describe('tensorport scan', () => {
  const refused = Object.entries(manifest).filter(([, m]) => m.loadError !== null);

  it.each(refused)('%s: unsafe, exit 1, every global the generator put in it listed', async (file, m) => {
    const r = await tensorport('scan', join(MALICIOUS, file), '--json');
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout) as ScanJson;
    expect(report.safe).toBe(false);
    expect(report.findings.length).toBeGreaterThan(0);
    for (const g of m.globals) if (!g.includes('[')) expect(report.globals).toContain(g);
    for (const f of report.findings) expect(f.code).toMatch(/^Pickle|^Zip/);
  });

  it('names the disallowed global in the text report', async () => {
    const r = await tensorport('scan', join(MALICIOUS, 'os_system.pkl'));
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/DISALLOWED global os\.system/);
    expect(r.stdout).toMatch(/REDUCE×1/);
    expect(r.stdout).toMatch(/UNSAFE/);
  });

  it('reports the reference evil checkpoints (posix.system, builtins.print) as unsafe', async () => {
    for (const file of ['evil_os_system.pt', 'evil_reduce_print.pt']) {
      const r = await tensorport('scan', join(REFERENCE, file), '--json');
      expect(r.code, file).toBe(1);
      const report = JSON.parse(r.stdout) as ScanJson;
      expect(report.verdicts.some((v) => !v.allowed), file).toBe(true);
    }
  });

  it('every fixture checkpoint torch.save wrote is safe, exit 0, every global allowed', async () => {
    const files = (await readdir(CHECKPOINTS)).filter((f) => f.endsWith('.pt'));
    expect(files.length).toBeGreaterThan(10);
    for (const f of files) {
      const r = await tensorport('scan', join(CHECKPOINTS, f), '--json');
      expect(r.code, f).toBe(0);
      const report = JSON.parse(r.stdout) as ScanJson;
      expect(report.safe, f).toBe(true);
      expect(report.findings).toEqual([]);
      expect(report.globals.length, f).toBeGreaterThan(0);
      expect(report.verdicts.every((v) => v.allowed), f).toBe(true);
    }
  });

  it('finds the pickle of an object array inside an npz and in a bare .npy', async () => {
    for (const file of ['fixtures/npz/reference/savez_object.npz', 'fixtures/npz/npy/refuse_O.npy']) {
      const r = await tensorport('scan', join(REPO, file), '--json');
      expect(r.code, file).toBe(1);
      expect((JSON.parse(r.stdout) as ScanJson).globals).toContain('numpy.dtype');
    }
  });

  it('a plain npz has no pickle: safe', async () => {
    const r = await tensorport('scan', join(REPO, 'fixtures/npz/npz/savez.npz'), '--json');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ safe: true, globals: [] });
  });

  it('a missing file is a readable error, exit 3 (could not read, not a verdict)', async () => {
    const r = await tensorport('scan', join(REPO, 'no-such-file.pt'));
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/no such file/);
  });
});
