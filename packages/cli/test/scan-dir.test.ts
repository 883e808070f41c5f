import { copyFile, mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../src/cli.ts';
import { SARIF_RULES } from '../src/sarif.ts';
import { REPO } from './helpers.ts';

async function run(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { stdout: { write: (s: string) => out.push(s) }, stderr: { write: (s: string) => err.push(s) } });
  return { code, stdout: out.join(''), stderr: err.join('') };
}

const CHECKPOINTS = join(REPO, 'fixtures/torch/checkpoints');
const SAFETENSORS = join(REPO, 'fixtures/safetensors');
const OBJECTS = join(REPO, 'fixtures/torch-objects');
const MALICIOUS = join(REPO, 'fixtures/torch/malicious');

let dir = '';
let safeDir = '';
let realFiles = 0;

/** A model folder as people download them: safe weights, configs, unsafe pickles under other names, nested runs. */
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tp-scan-dir-'));
  safeDir = join(dir, 'safe');
  await mkdir(join(dir, 'runs/a/b'), { recursive: true });
  await mkdir(safeDir);
  for (const f of (await readdir(CHECKPOINTS)).filter((x) => x.endsWith('.pt'))) await copyFile(join(CHECKPOINTS, f), join(dir, f));
  for (const f of (await readdir(SAFETENSORS)).filter((x) => x.endsWith('.safetensors')).slice(0, 30)) await copyFile(join(SAFETENSORS, f), join(dir, 'runs/a', f));
  for (const f of ['lightning.ckpt', 'full-model.pt', 'hostile-payloads.pt']) await copyFile(join(OBJECTS, f), join(dir, 'runs/a/b', f));
  await copyFile(join(MALICIOUS, 'os_system.pkl'), join(dir, 'runs/notes.txt')); // a pickle, whatever its name
  await copyFile(join(CHECKPOINTS, 'dtypes.pt'), join(safeDir, 'dtypes.pt'));
  await writeFile(join(dir, 'config.json'), '{"model_type": "bert"}\n');
  await writeFile(join(dir, 'README.md'), '# a model\n');
  realFiles = (await readdir(dir, { recursive: true, withFileTypes: true })).filter((e) => e.isFile()).length;
  await symlink(join(dir, 'dtypes.pt'), join(dir, 'runs/link-to-first.pt')).catch(() => {}); // same file: reported once
  await symlink(dir, join(dir, 'runs/loop')).catch(() => {}); // a directory loop: walked once
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('tensorport scan <directory>', () => {
  it('scans every file below it once, by content, one line each and a summary; exit 1 when something is unsafe', async () => {
    expect(realFiles).toBeGreaterThanOrEqual(50);
    const r = await run('scan', dir);
    expect(r.code).toBe(1);
    const lines = r.stdout.trim().split('\n');
    const files = lines.slice(0, -1);
    expect(files).toHaveLength(realFiles);
    expect(new Set(files.map((l) => l.slice(0, l.indexOf(': '))))).toHaveProperty('size', realFiles);
    expect(lines.at(-1)).toMatch(new RegExp(`^scanned ${realFiles} files: \\d+ safe, 4 unsafe, \\d+ without pickles`));
    expect(files.find((l) => l.includes('notes.txt'))).toMatch(/UNSAFE/);
    expect(files.find((l) => l.includes('config.json'))).toMatch(/no pickle found/);
  });

  it('--json: one entry per file with its verdict and globals', async () => {
    const r = await run('scan', dir, '--json');
    const tree = JSON.parse(r.stdout) as { files: Array<{ path: string; result?: { verdict: string; globals: string[] } }>; summary: { files: number; unsafe: number } };
    expect(tree.summary).toMatchObject({ files: realFiles, unsafe: 4 });
    const hostile = tree.files.find((f) => f.path.endsWith('hostile-payloads.pt'))!;
    expect(hostile.result!.globals).toEqual(expect.arrayContaining(['posix.system', 'socket.create_connection']));
  });

  it('exit 0 for a folder of safe checkpoints; exit 3 when a file cannot be read and nothing is unsafe', async () => {
    expect((await run('scan', safeDir)).code).toBe(0);
    await symlink(join(safeDir, 'missing.pt'), join(safeDir, 'dangling.pt'));
    const r = await run('scan', safeDir);
    expect(r.code).toBe(3);
    expect(r.stdout).toMatch(/dangling\.pt: COULD NOT READ/);
    await rm(join(safeDir, 'dangling.pt'));
    expect((await run('scan', join(safeDir, 'no-such-file.pt'))).code).toBe(3);
  });

  it('--format sarif: SARIF 2.1.0 with one result per disallowed global per file, the file as artifact location, stable rule ids', async () => {
    const json = JSON.parse((await run('scan', dir, '--json')).stdout) as { files: Array<{ path: string; result?: { verdicts: Array<{ global: string; allowed: boolean }> } }> };
    const r = await run('scan', dir, '--format', 'sarif');
    expect(r.code).toBe(1);
    const log = JSON.parse(r.stdout) as SarifLog;
    expectSarifShape(log);
    const run0 = log.runs[0]!;
    expect(run0.tool.driver.rules.map((x) => x.id)).toEqual(SARIF_RULES.map((x) => x.id));
    const disallowed = run0.results.filter((x) => x.ruleId === 'TP1001');
    const expected = json.files.flatMap((f) => (f.result?.verdicts ?? []).filter((v) => !v.allowed).map((v) => `${relative(dir, f.path)} ${v.global}`));
    expect(disallowed.map((x) => `${decodeURIComponent(x.locations[0]!.physicalLocation.artifactLocation.uri)} ${/global (\S+)/.exec(x.message.text)![1]}`).sort()).toEqual(expected.sort());
    expect(disallowed.some((x) => x.locations[0]!.physicalLocation.artifactLocation.uri === 'runs/notes.txt')).toBe(true);
  });
});

interface SarifLog {
  version: string;
  $schema?: string;
  runs: Array<{
    tool: { driver: { name: string; version?: string; rules: Array<{ id: string; shortDescription?: { text: string } }> } };
    artifacts?: Array<{ location: { uri: string } }>;
    results: Array<{ ruleId: string; ruleIndex?: number; level?: string; message: { text: string }; locations: Array<{ physicalLocation: { artifactLocation: { uri: string; index?: number } } }> }>;
  }>;
}

/** The properties SARIF 2.1.0's schema requires (sarifLog: version, runs; run: tool; tool: driver; driver: name; result: message; message: text or id) and its enums. */
function expectSarifShape(log: SarifLog): void {
  expect(log.version).toBe('2.1.0');
  expect(Array.isArray(log.runs)).toBe(true);
  for (const run of log.runs) {
    expect(typeof run.tool.driver.name).toBe('string');
    const ids = new Set<string>();
    for (const rule of run.tool.driver.rules) {
      expect(typeof rule.id).toBe('string');
      expect(ids.has(rule.id)).toBe(false);
      ids.add(rule.id);
    }
    for (const res of run.results) {
      expect(typeof res.message.text).toBe('string');
      expect(['none', 'note', 'warning', 'error']).toContain(res.level);
      expect(run.tool.driver.rules[res.ruleIndex!]!.id).toBe(res.ruleId);
      for (const loc of res.locations) {
        const a = loc.physicalLocation.artifactLocation;
        expect(a.uri).not.toMatch(/^\//); // relative to %SRCROOT%
        expect(run.artifacts![a.index!]!.location.uri).toBe(a.uri);
      }
    }
  }
}
