/**
 * Finding and running a Python for interop tests (Node-only test helper).
 *
 * Different modules may live in different interpreters (CI pip-installs safetensors into `python3`
 * but gets torch 1.13 from Debian for `/usr/bin/python3`), so every request for a set of modules is
 * answered on its own: the first candidate that imports all of them wins.
 *
 * Pattern for a test file:
 *
 *   const py = await requirePython(['safetensors', 'numpy']);
 *   describe.skipIf(!py)('interop', () => {
 *     it('loads', async () => {
 *       const out = await runPython(py!.exe, 'import safetensors; print(1)');
 *     });
 *   });
 *
 * `requirePython` throws at collection time when TENSORPORT_REQUIRE_INTEROP=1 (CI), so a missing
 * module fails the file instead of silently skipping it.
 */
import { spawn } from 'node:child_process';
import { test, TestRunner } from 'vitest';

export interface PythonInfo {
  /** The interpreter as it can be passed to `runPython`. */
  exe: string;
  /** Version of each requested module, as the module reports it. */
  versions: Record<string, string>;
}

export interface RunOptions {
  /** Bytes or text written to the script's stdin. */
  input?: Uint8Array | string;
  /** Extra argv after the script (`sys.argv[1:]`). */
  args?: string[];
  /** Milliseconds before the process is killed; the default suits loading torch. */
  timeout?: number;
}

const DEFAULT_TIMEOUT = 120_000;

/** Candidate interpreters, in the order they are tried. */
export function pythonCandidates(): string[] {
  const fromEnv = process.env.TENSORPORT_PYTHON;
  const list = [fromEnv, 'python3', '/usr/bin/python3'].filter((x): x is string => !!x);
  return [...new Set(list)];
}

/** exe → module → version (null: not importable). Only probed modules are present. */
const probed = new Map<string, Map<string, string | null>>();
/** exe → false when the interpreter itself cannot be started. */
const broken = new Set<string>();

// Prints a JSON object {module: version|null}; one subprocess answers for all unknown modules.
const PROBE = `
import importlib, json, sys
out = {}
for name in sys.argv[1:]:
    try:
        m = importlib.import_module(name)
    except Exception:
        out[name] = None
        continue
    v = getattr(m, "__version__", None)
    if v is None:
        try:
            from importlib import metadata
            v = metadata.version(name)
        except Exception:
            v = "unknown"
    out[name] = str(v)
out["__python__"] = sys.version.split()[0]
print(json.dumps(out))
`;

async function probe(exe: string, modules: string[]): Promise<Map<string, string | null> | null> {
  if (broken.has(exe)) return null;
  let known = probed.get(exe);
  const missing = modules.filter((m) => !known?.has(m));
  if (known && missing.length === 0) return known;
  let text: string;
  try {
    text = await runPython(exe, PROBE, { args: missing, timeout: DEFAULT_TIMEOUT });
  } catch {
    broken.add(exe);
    return null;
  }
  const parsed = JSON.parse(text.trim().split('\n').pop() ?? '{}') as Record<string, string | null>;
  known ??= new Map();
  for (const m of missing) known.set(m, parsed[m] ?? null);
  if (typeof parsed.__python__ === 'string') known.set('__python__', parsed.__python__);
  probed.set(exe, known);
  return known;
}

/** The first candidate interpreter that imports every module in `modules`, or null. */
export async function findPython(modules: string[]): Promise<PythonInfo | null> {
  for (const exe of pythonCandidates()) {
    const known = await probe(exe, modules);
    if (!known) continue;
    if (modules.every((m) => typeof known.get(m) === 'string')) {
      const versions: Record<string, string> = {};
      for (const m of modules) versions[m] = known.get(m) as string;
      const pyVersion = known.get('__python__');
      if (typeof pyVersion === 'string') versions.python = pyVersion;
      return { exe, versions };
    }
  }
  return null;
}

function spawnPython(
  exe: string,
  code: string,
  options: RunOptions,
): Promise<{ stdout: Buffer; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(exe, ['-c', code, ...(options.args ?? [])], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, PYTHONIOENCODING: 'utf-8', PYTHONHASHSEED: '0' },
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, options.timeout ?? DEFAULT_TIMEOUT);
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => err.push(d));
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      const stderr = Buffer.concat(err).toString('utf8');
      if (status === 0) resolve({ stdout: Buffer.concat(out), stderr });
      else {
        const why = timedOut ? `timed out after ${options.timeout ?? DEFAULT_TIMEOUT} ms` : `exit ${status ?? signal}`;
        reject(new Error(`${exe} failed (${why}):\n${stderr}`));
      }
    });
    // A script that does not read stdin may exit before we finish writing: ignore EPIPE.
    child.stdin.on('error', () => {});
    if (options.input !== undefined) child.stdin.end(options.input);
    else child.stdin.end();
  });
}

/** Runs `code` with `exe -c`; resolves to stdout as text, rejects with stderr on failure. */
export async function runPython(exe: string, code: string, options: RunOptions = {}): Promise<string> {
  return (await spawnPython(exe, code, options)).stdout.toString('utf8');
}

/** Like `runPython` but resolves to stdout's raw bytes. */
export async function runPythonBytes(exe: string, code: string, options: RunOptions = {}): Promise<Buffer> {
  return (await spawnPython(exe, code, options)).stdout;
}

interface Gate {
  what: string;
  /** Index of the first top-level task registered after this gate in the file. */
  first: number;
}
interface TaskLike {
  mode?: string;
  tasks?: TaskLike[];
  file?: TaskLike;
  suite?: TaskLike;
}
/** Per test file (its top-level collector): the gates that found no Python, in file order. */
const missingGates = new WeakMap<object, Gate[]>();

function skippedTests(t: TaskLike): number {
  if (Array.isArray(t.tasks)) return t.tasks.reduce((n, x) => n + skippedTests(x), 0);
  return t.mode === 'skip' ? 1 : 0;
}

/**
 * Reports, once the file's tests are collected, how many tests each missing gate skipped: the
 * top-level describes/tests registered after the gate and before the next one (the documented
 * pattern). The report is a test of its own that runs first and ends skipped with the same note;
 * a file whose tests were all skipped would run no hook, so a hook cannot carry the message.
 */
function reportSkipped(what: string): void {
  const collector = TestRunner.getCurrentSuite() as unknown as { tasks: unknown[] } | undefined;
  if (!collector || !Array.isArray(collector.tasks)) {
    console.log(`interop: skipped tests: ${what}`);
    return;
  }
  let gates = missingGates.get(collector);
  if (!gates) {
    const list: Gate[] = [];
    gates = list;
    missingGates.set(collector, list);
    test('interop: Python modules missing', (ctx) => {
      // The suite the gate was called in: the file for a top-level gate.
      const task = ctx.task as unknown as TaskLike;
      const top = (task.suite ?? task.file)?.tasks ?? [];
      const notes = list.map((g, i) => {
        const end = list[i + 1]?.first ?? top.length;
        const n = top.slice(g.first, end).reduce((k, t) => k + skippedTests(t), 0);
        return `interop: skipped ${n} tests: ${g.what}`;
      });
      for (const note of notes) console.log(note);
      ctx.skip(notes.join('; '));
    });
  }
  gates.push({ what, first: collector.tasks.length });
}

export interface RequireOptions {
  /**
   * Extra coverage that CI may lack (e.g. torch next to safetensors): skip with the message even
   * when TENSORPORT_REQUIRE_INTEROP=1.
   */
  optional?: boolean;
}

/**
 * The gate for interop tests. Returns the interpreter, or null after printing
 * `interop: skipped N tests: no python with a,b`. Throws instead when TENSORPORT_REQUIRE_INTEROP=1
 * (unless `optional`).
 */
export async function requirePython(modules: string[], options: RequireOptions = {}): Promise<PythonInfo | null> {
  const py = await findPython(modules);
  if (py) return py;
  const what = `no python with ${modules.join(',')} (tried ${pythonCandidates().join(', ')})`;
  if (process.env.TENSORPORT_REQUIRE_INTEROP === '1' && !options.optional) {
    throw new Error(`interop required (TENSORPORT_REQUIRE_INTEROP=1) but ${what}`);
  }
  reportSkipped(what);
  return null;
}
