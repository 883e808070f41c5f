/**
 * Multi-file outputs (shards + index) appear all together or not at all: a failing commit in the
 * middle of the series, a full disk (a real tmpfs when we may mount one), SIGTERM between two
 * renames (rolled back by the signal handler) and SIGKILL there (rolled back by the next run's
 * sweep). Also the sweep of stale temp files (issue 10 item 12).
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CommitGroup, FileSink, setStaleFileReporter, sweepStaleFiles, writeCheckpointPath } from '../src/node/index.ts';
import { TensorportError, writeSharded, type ByteSink, type TensorDescriptor } from '../src/index.ts';
import { memTensor } from './helpers/mem-tensor.ts';
import { codeOf } from './helpers/error-code.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tensorport-commit-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

let n = 0;
async function fresh(): Promise<string> {
  const d = join(dir, `d${n++}`);
  await mkdir(d, { recursive: true });
  return d;
}

/** Six tensors of `size` bytes, one per shard with maxShardSize = size. */
function sixTensors(size: number, seed = 0): TensorDescriptor[] {
  return Array.from({ length: 6 }, (_, i) => memTensor(`t${i}`, 'U8', [size], new Uint8Array(size).fill(seed + i + 1)));
}

async function snapshot(d: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const f of (await readdir(d)).sort()) out[f] = (await readFile(join(d, f))).toString('base64').slice(0, 64) + `:${(await readFile(join(d, f))).byteLength}`;
  return out;
}

/** Opens file sinks in `d` (one group) and runs `before(k)` right before the k-th commit (1-based). */
function sinksWith(d: string, force: boolean, before: (k: number, sink: FileSink) => Promise<void>): (name: string) => Promise<ByteSink> {
  const group = new CommitGroup();
  let k = 0;
  return async (name) => {
    const sink = await FileSink.create(join(d, name), { force, group });
    return Object.assign(Object.create(sink) as FileSink, {
      commit: async () => {
        await before(++k, sink);
        return sink.commit();
      },
      prepare: () => sink.prepare(),
      revert: () => sink.revert(),
      finish: () => sink.finish(),
      write: (c: Uint8Array) => sink.write(c),
      abort: () => sink.abort(),
    });
  };
}

describe('a failing commit rolls back the ones before it', () => {
  it('third of seven commits fails (the target appeared meanwhile): nothing of ours stays', async () => {
    const d = await fresh();
    const code = await codeOf(
      writeSharded(sixTensors(1000), null, sinksWith(d, false, async (k, sink) => {
        // Another process creates the third shard's name between our checks and our link.
        if (k === 3) await writeFile(sink.name, 'someone else');
      }), { maxShardSize: 1000 }),
    );
    expect(code).toBe('OutputExists');
    expect(await readdir(d)).toEqual(['model-00003-of-00006.safetensors']);
    expect(await readFile(join(d, 'model-00003-of-00006.safetensors'), 'utf8')).toBe('someone else');
  });

  it('with force, a failure at the 5th commit puts every replaced file back byte for byte', async () => {
    const d = await fresh();
    await writeCheckpointPath(sixTensors(1000, 10), null, d, { maxShardSize: 1000 });
    const before = await snapshot(d);
    expect(Object.keys(before)).toHaveLength(7);
    const code = await codeOf(
      writeSharded(sixTensors(1000, 50), null, sinksWith(d, true, async (k, sink) => {
        // Someone removes our fifth temp file: its rename fails with ENOENT, a real failure.
        if (k === 5) await rm(sink.tempPath);
      }), { maxShardSize: 1000 }),
    );
    expect(code).toBe('IoError');
    expect(await snapshot(d)).toEqual(before);
  });
});

describe('a full disk (real ENOSPC on a small tmpfs)', () => {
  let mnt: string | null = null;
  beforeAll(async () => {
    const m = await mkdtemp(join(tmpdir(), 'tensorport-enospc-'));
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', m], { stdio: 'ignore' });
      mnt = m;
    } catch {
      await rm(m, { recursive: true, force: true });
    }
  });
  afterAll(async () => {
    if (mnt) {
      execFileSync('umount', [mnt]);
      await rm(mnt, { recursive: true, force: true });
    }
  });
  it('six 300 kB shards on 1 MiB: IoError (ENOSPC) before any rename, directory left empty', async (ctx) => {
    if (!mnt) return ctx.skip(); // needs root (mount); the failing-commit tests above cover the rollback
    const d = join(mnt, 'out');
    await mkdir(d);
    let err: unknown;
    try {
      await writeCheckpointPath(sixTensors(300_000), null, d, { maxShardSize: 300_000 });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TensorportError);
    expect((err as TensorportError).code).toBe('IoError');
    expect(String((err as Error).message)).toMatch(/ENOSPC|no space/i);
    expect(await readdir(d)).toEqual([]);
  });
});

const here = fileURLToPath(new URL('.', import.meta.url));
let childScript: string;
beforeAll(async () => {
  const require = createRequire(import.meta.url);
  const esbuild = createRequire(require.resolve('tsup'))('esbuild') as { build(options: Record<string, unknown>): Promise<unknown> };
  const entry = join(dir, 'commit-child.ts');
  // Modes: `commit` stops before the 3rd of 7 commits (two shards already renamed) and says so;
  // `write` stops in the middle of writing one file.
  await writeFile(
    entry,
    `import { CommitGroup, FileSink } from ${JSON.stringify(resolve(here, '../src/node/index.ts'))};
import { writeSharded } from ${JSON.stringify(resolve(here, '../src/safetensors/sharded.ts'))};
const [d, mode, force] = process.argv.slice(2);
const wait = () => new Promise((r) => setTimeout(r, 20000));
if (mode === 'write') {
  const sink = await FileSink.create(d + '/model.safetensors');
  await sink.write(new Uint8Array(100000).fill(7));
  await sink.write(new Uint8Array(5 * 1024 * 1024).fill(7));
  process.stdout.write(JSON.stringify({ temp: sink.tempPath }) + '\\n');
  await wait();
} else {
  const group = new CommitGroup();
  let k = 0;
  const tensors = Array.from({ length: 6 }, (_, i) => ({ name: 't' + i, dtype: 'U8', shape: [1000], byteLength: 1000, async *chunks() { yield new Uint8Array(1000).fill(99); } }));
  await writeSharded(tensors, null, async (name) => {
    const sink = await FileSink.create(d + '/' + name, { force: force === 'force', group });
    const commit = sink.commit.bind(sink);
    sink.commit = async () => {
      if (++k === 3) { process.stdout.write(JSON.stringify({ committing: k }) + '\\n'); await wait(); }
      return commit();
    };
    return sink;
  }, { maxShardSize: 1000 });
}
`,
  );
  childScript = join(dir, 'commit-child.mjs');
  await esbuild.build({ entryPoints: [entry], bundle: true, platform: 'node', format: 'esm', target: 'node20', outfile: childScript, logLevel: 'error' });
});

/** Runs the child until it reports its line; then `onLine` (which may kill it); resolves on exit. */
function runChild(args: string[], onLine: (line: Record<string, unknown>, kill: (s: NodeJS.Signals) => void) => Promise<void>): Promise<{ signal: NodeJS.Signals | null; code: number | null }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [childScript, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let seen = false;
    const timer = setTimeout(() => child.kill('SIGKILL'), 25_000);
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line && !seen) {
        seen = true;
        onLine(JSON.parse(line) as Record<string, unknown>, (s) => child.kill(s)).catch(reject);
      }
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolvePromise({ code, signal });
    });
  });
}

describe('signals between two renames', () => {
  it.each([['new directory', false], ['--force over an older model', true]] as const)('SIGTERM, %s: the handler rolls back', async (_, force) => {
    const d = await fresh();
    if (force) await writeCheckpointPath(sixTensors(1000, 10), null, d, { maxShardSize: 1000 });
    const before = await snapshot(d);
    let during: string[] = [];
    const r = await runChild([d, 'commit', force ? 'force' : ''], async (_line, kill) => {
      during = await readdir(d);
      kill('SIGTERM');
    });
    expect(r.signal).toBe('SIGTERM');
    // The child really was between renames: two shards under their final names, a journal.
    expect(during.filter((f) => f.endsWith('.commit'))).toHaveLength(1);
    if (!force) expect(during).toContain('model-00002-of-00006.safetensors');
    expect(await snapshot(d)).toEqual(before);
  });

  it.each([['new directory', false], ['--force over an older model', true]] as const)('SIGKILL, %s: the next run rolls back and says so', async (_, force) => {
    const d = await fresh();
    if (force) await writeCheckpointPath(sixTensors(1000, 10), null, d, { maxShardSize: 1000 });
    const before = await snapshot(d);
    const r = await runChild([d, 'commit', force ? 'force' : ''], async (_line, kill) => kill('SIGKILL'));
    expect(r.signal).toBe('SIGKILL');
    const left = await readdir(d);
    expect(left.filter((f) => f.endsWith('.commit'))).toHaveLength(1);
    expect(left).toContain('model-00001-of-00006.safetensors');
    const messages: string[] = [];
    const previous = setStaleFileReporter((m) => messages.push(m));
    try {
      sweepStaleFiles(d);
    } finally {
      setStaleFileReporter(previous);
    }
    expect(await snapshot(d)).toEqual(before);
    expect(messages.some((m) => /rolled back an interrupted multi-file write/.test(m) && /model-00001-of-00006/.test(m))).toBe(true);
  });

  it('SIGKILL between renames, then a plain rerun without --force: rolled back first, so it succeeds', async () => {
    const d = await fresh();
    const r = await runChild([d, 'commit', ''], async (_line, kill) => kill('SIGKILL'));
    expect(r.signal).toBe('SIGKILL');
    expect(await readdir(d)).toContain('model-00002-of-00006.safetensors');
    const messages: string[] = [];
    const previous = setStaleFileReporter((m) => messages.push(m));
    try {
      await writeCheckpointPath(sixTensors(1000, 70), null, d, { maxShardSize: 1000 });
    } finally {
      setStaleFileReporter(previous);
    }
    expect(messages).toHaveLength(1);
    expect((await readdir(d)).sort()).toEqual([...Array.from({ length: 6 }, (_, i) => `model-0000${i + 1}-of-00006.safetensors`), 'model.safetensors.index.json']);
    expect((await readFile(join(d, 'model-00001-of-00006.safetensors')).then((b) => b.at(-1)))).toBe(71);
  });
});

describe('stale temp files (kill -9 mid-write)', () => {
  it('the next FileSink in the directory removes them and reports it; a live writer\'s file is left alone', async () => {
    const d = await fresh();
    let temp = '';
    const killed = await runChild([d, 'write'], async (line, kill) => {
      temp = line.temp as string;
      kill('SIGKILL');
    });
    expect(killed.signal).toBe('SIGKILL');
    expect(await readdir(d)).toEqual([temp.slice(d.length + 1)]);

    const messages: string[] = [];
    const previous = setStaleFileReporter((m) => messages.push(m));
    try {
      const sink = await FileSink.create(join(d, 'other.safetensors'));
      await sink.abort();
    } finally {
      setStaleFileReporter(previous);
    }
    expect(messages).toHaveLength(1);
    expect(messages[0]).toContain(temp);
    expect(messages[0]).toMatch(/no longer running/);
    expect(await readdir(d)).toEqual([]);

    // A second writer, still alive while we sweep.
    let liveTemp = '';
    let release: (s: NodeJS.Signals) => void = () => {};
    const live = runChild([d, 'write'], async (line, kill) => {
      liveTemp = line.temp as string;
      release = kill;
    });
    while (!liveTemp) await new Promise((r) => setTimeout(r, 20));
    expect(sweepStaleFiles(d)).toEqual([]);
    expect(await readdir(d)).toEqual([liveTemp.slice(d.length + 1)]);
    release('SIGTERM');
    await live;
    expect(await readdir(d)).toEqual([]);
  });

  it('temp names carry pid and start time; other names of ours (old format, foreign) are never touched', async () => {
    const d = await fresh();
    const sink = await FileSink.create(join(d, 'a.bin'));
    expect(sink.tempPath).toMatch(new RegExp(`/\\.a\\.bin\\.tensorport-${process.pid}-\\d+-[0-9a-f]{8}\\.tmp$`));
    await sink.abort();
    // A dead pid in the right shape is stale; the pre-pid format and other names are not ours to judge.
    await writeFile(join(d, '.x.tensorport-0123456789ab.tmp'), 'old format');
    await writeFile(join(d, '.x.tensorport-999999999-5-0badc0de.txt'), 'not ours');
    await writeFile(join(d, '.x.tensorport-999999999-5-0badc0de.tmp'), 'stale');
    const messages: string[] = [];
    const previous = setStaleFileReporter((m) => messages.push(m));
    try {
      expect(sweepStaleFiles(d)).toEqual(['.x.tensorport-999999999-5-0badc0de.tmp']);
    } finally {
      setStaleFileReporter(previous);
    }
    expect((await readdir(d)).sort()).toEqual(['.x.tensorport-0123456789ab.tmp', '.x.tensorport-999999999-5-0badc0de.txt']);
  });
});
