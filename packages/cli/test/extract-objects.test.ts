import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../src/cli.ts';
import { REPO } from './helpers.ts';

async function run(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { stdout: { write: (s: string) => out.push(s) }, stderr: { write: (s: string) => err.push(s) } });
  return { code, stdout: out.join(''), stderr: err.join('') };
}

const OBJECTS = join(REPO, 'fixtures/torch-objects');
interface Manifest { unsafeGlobals: string[]; select: string | null; tensors: Array<{ name: string; shape: number[] }> }
const manifest = (f: string) => JSON.parse(readFileSync(join(OBJECTS, `${f}.manifest.json`), 'utf8')) as Manifest;
const work = await mkdtemp(join(tmpdir(), 'tp-extract-'));
afterAll(() => rm(work, { recursive: true, force: true }));

describe('--allow-objects on convert and inspect', () => {
  // (the DeepSpeed layout needs no flag: torch.Size and sets are on the allowlist, as weights_only loads it)
  for (const file of ['lightning.ckpt', 'full-model.pt', 'transformers-bert.pt', 'namespace-numpy.pt']) {
    it(`${file}: refused without the flag (naming every foreign global); converts with it`, async () => {
      const m = manifest(file);
      const src = join(OBJECTS, file);
      const out = join(work, `${file.replace(/\//g, '_')}.safetensors`);
      const select = m.select ? ['--select', m.select] : [];
      const refused = await run('convert', src, out, ...select);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/PickleDisallowedGlobal/);
      for (const g of m.unsafeGlobals) expect(refused.stderr).toContain(g);

      const ok = await run('convert', src, out, ...select, '--allow-objects', '--keep-aliases', '--json');
      expect(ok.code, ok.stderr).toBe(0);
      const report = JSON.parse(ok.stdout) as { tensors: number; warnings: Array<{ code: string; message: string }> };
      expect(report.tensors).toBe(m.tensors.length);
      expect(report.warnings.find((w) => w.code === 'TorchForeignObjects')?.message).toContain(m.unsafeGlobals[0]!);

      const inspected = JSON.parse((await run('inspect', out, '--json')).stdout) as { tensors: Array<{ name: string; shape: number[] }> };
      expect(inspected.tensors.map((t) => t.name).sort()).toEqual(m.tensors.map((t) => t.name).sort());
    });
  }

  it('inspect --allow-objects lists a whole-module pickle\'s state_dict names', async () => {
    const r = await run('inspect', join(OBJECTS, 'full-model.pt'), '--allow-objects', '--json');
    expect(r.code, r.stderr).toBe(0);
    const names = (JSON.parse(r.stdout) as { tensors: Array<{ name: string }> }).tensors.map((t) => t.name);
    expect(names).toContain('features.1.running_var');
    expect(names).not.toContain('tmp');
  });

  it('scan stays strict: the same files are unsafe, exit 1', async () => {
    const r = await run('scan', join(OBJECTS, 'lightning.ckpt'));
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/DISALLOWED global argparse\.Namespace/);
  });
});
