#!/usr/bin/env node
// Proves the packages are publishable (docs/packaging.md): packs every non-private workspace package
// with pnpm, installs the tarballs with plain `npm install` into an empty directory outside the
// workspace, and runs the installed CLI and every entry point there, under import() and require().
//
//   node scripts/pack-install.mjs [--build] [--keep] [--json]
//
// --build runs `turbo run build` first (without it, dist/ must be built); --keep leaves the
// directory; --json prints the checks as one JSON object. Exit 1 when a check fails.
import { spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SOURCE_CONDITION = '@tensorport/source';
/** The torch.save file converted by the installed CLI (a state_dict of two tensors). */
const TORCH_FIXTURE = join(ROOT, 'fixtures/torch/checkpoints/parameters.pt');
// The pinned pnpm, through npx as the project runs it (node_modules/.bin/pnpm is not always runnable).
const PNPM = ['npx', ['--yes', 'pnpm@12.4.2']];

/**
 * One way to make each library entry point throw: the error must be a TensorportError of the one
 * class every other entry exports. Keyed by import specifier; `m` is the entry's module, `core` is
 * @tensorport/core, `ctx.missing` a path that does not exist. A published entry without a row
 * here fails the run.
 */
const TRIGGERS = String.raw`{
  'tensorport': (m) => m.inspect(m.memoryContext(new m.MemoryFolder([['x.safetensors', new Uint8Array(3)]]), 'x.safetensors')),
  'tensorport/node': (m, core, ctx) => m.inspectPath(ctx.missing),
  // main() never throws: its --json failure object is turned back into the error it reports.
  'tensorport/cli': async (m, core, ctx) => {
    let out = '';
    const code = await m.main(['inspect', ctx.missing, '--json'], { stdout: { write: (t) => (out += t) }, stderr: { write() {} } });
    const e = JSON.parse(out).error;
    if (code === 1 && e) throw new core.TensorportError(e.code, e.message);
  },
  '@tensorport/lib': (m) => m.inspect(m.memoryContext(new m.MemoryFolder([['x.safetensors', new Uint8Array(3)]]), 'x.safetensors')),
  '@tensorport/lib/node': (m, core, ctx) => m.inspectPath(ctx.missing),
  '@tensorport/core': (m) => m.openSafetensors(new m.BytesSource(new Uint8Array(3))),
  '@tensorport/core/node': (m, core, ctx) => m.FileSource.open(ctx.missing),
  '@tensorport/npz': (m, core) => m.openNpy(new core.BytesSource(new Uint8Array(16))),
  '@tensorport/torch-zip': (m) => m.openTorchCheckpoint(new Uint8Array(64)),
  '@tensorport/torch-zip/node': (m, core, ctx) => m.openTorchCheckpointFile(ctx.missing),
  '@tensorport/mlx': (m) => m.checkAffineParams(7, 64),
  '@tensorport/gguf': (m, core) => m.openGguf(new core.BytesSource(new Uint8Array(64))),
  '@tensorport/hf-quant': (m) => m.hfQuantScheme({ quantization_config: { quant_method: 'fp8', weight_block_size: [0, 128] } }),
}`;

/**
 * Entry points that are not libraries, so not made to throw: the inspector's static server, and the
 * command line itself (importing it runs the CLI; the tensorport bin does exactly that).
 */
const NOT_LIBRARIES = new Set(['@tensorport/web/server']);

// Runs in the install directory (CommonJS, so the ESM and the CJS runner share it). Prints one JSON
// line: a result per entry point. `load` is import() or require().
const RUNNER = `'use strict';
const { join } = require('node:path');
const TRIGGERS = ${TRIGGERS};
exports.run = async function run(mode, load, entries, ctx) {
  const results = [];
  const core = await load('@tensorport/core');
  // Under import(), the classes reached by require() must be the same one (see docs/packaging.md).
  const classes = [['@tensorport/core', core.TensorportError]];
  if (mode === 'esm') classes.push(['require(@tensorport/core)', require('@tensorport/core').TensorportError]);
  if (entries.includes('tensorport')) classes.push(['tensorport', (await load('tensorport')).TensorportError]);
  for (const [where, cls] of classes) if (typeof cls !== 'function') results.push({ entry: where, ok: false, detail: 'exports no TensorportError class' });
  for (const entry of entries) {
    let m;
    try {
      m = await load(entry);
    } catch (e) {
      results.push({ entry, ok: false, detail: 'cannot be loaded: ' + (e && e.message) });
      continue;
    }
    const trigger = TRIGGERS[entry];
    if (!trigger) {
      results.push({ entry, ok: false, detail: 'no error trigger for this entry point in scripts/pack-install.mjs' });
      continue;
    }
    let error;
    try {
      await trigger(m, core, ctx);
    } catch (e) {
      error = e;
    }
    if (error === undefined) {
      results.push({ entry, ok: false, detail: 'the trigger threw nothing' });
      continue;
    }
    const notInstance = classes.filter(([, cls]) => typeof cls === 'function' && !(error instanceof cls)).map(([where]) => where);
    const ok = notInstance.length === 0 && typeof error.code === 'string';
    const detail = ok ? error.code : 'threw ' + (error && error.name) + ' (' + (error && error.message) + '), not an instance of TensorportError from ' + notInstance.join(', ');
    results.push({ entry, ok, detail });
  }
  return results;
};
`;

const ESM_RUNNER = `import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const [entries, ctx] = JSON.parse(process.argv[2]);
const results = await require('./runner.cjs').run('esm', (s) => import(s), entries, ctx);
// The Node wrapper must carry every name of the ESM build (bundlers and browsers use that one).
for (const [entry, esmFile] of Object.entries(ctx.esmFiles)) {
  const real = Object.keys(await import(esmFile));
  const wrapped = new Set(Object.keys(await import(entry)));
  const missing = real.filter((k) => !wrapped.has(k));
  results.push({ entry: entry + ' (names)', ok: real.length > 0 && missing.length === 0, detail: missing.length ? 'import() in Node lacks ' + missing.join(', ') : real.length + ' names' });
}
console.log(JSON.stringify(results));
`;

const CJS_RUNNER = `'use strict';
const [entries, ctx] = JSON.parse(process.argv[2]);
require('./runner.cjs').run('cjs', async (s) => require(s), entries, ctx).then((r) => console.log(JSON.stringify(r)));
`;

/** Child process with the npm_* variables of an enclosing `npm test` removed; resolves, never rejects. */
export function run(cmd, args, { cwd, timeoutMs = 120_000 } = {}) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      resolve({ status: null, stdout, stderr: stderr + String(e) });
    });
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stdout, stderr });
    });
  });
}

/** The end of a child's output without stack frames, for a check's detail. */
const tail = (r) =>
  `${r.stderr}${r.stdout}`
    .trim()
    .split('\n')
    .filter((l) => !/^\s+at /.test(l) && !/^\s*\^+\s*$/.test(l) && l.trim() !== '')
    .slice(-8)
    .join('\n');

/** Every non-private workspace package, with its package.json. */
export async function publishablePackages() {
  const out = [];
  for (const dir of (await readdir(join(ROOT, 'packages'))).sort()) {
    const file = join(ROOT, 'packages', dir, 'package.json');
    const pkg = JSON.parse(await readFile(file, 'utf8').catch(() => 'null'));
    if (pkg && !pkg.private) out.push({ dir: join(ROOT, 'packages', dir), pkg });
  }
  return out;
}

/** Every file a package.json field points at (exports targets, main, module, types, bin). */
function referencedFiles(pkg) {
  const files = new Set();
  const walk = (v) => {
    if (typeof v === 'string') files.add(v.replace(/^\.\//, ''));
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(pkg.exports);
  for (const f of ['main', 'module', 'types']) if (pkg[f]) walk(pkg[f]);
  walk(typeof pkg.bin === 'string' ? { [pkg.name]: pkg.bin } : pkg.bin);
  return [...files].filter((f) => !f.includes('*'));
}

/** Strips the source-only condition, as the published exports must read. */
function withoutSource(v) {
  if (!v || typeof v !== 'object') return v;
  return Object.fromEntries(Object.entries(v).filter(([k]) => k !== SOURCE_CONDITION).map(([k, x]) => [k, withoutSource(x)]));
}

/** Checks one packed package.json and file list against the workspace package. */
function checkTarball({ pkg: ws }, packed, fileList, licenseSame) {
  const problems = [];
  const text = JSON.stringify(packed);
  if (packed.private) problems.push('private');
  if (text.includes(SOURCE_CONDITION)) problems.push(`still names ${SOURCE_CONDITION}`);
  if (text.includes('workspace:')) problems.push('a workspace: dependency is left');
  if (packed.publishConfig?.exports) problems.push('publishConfig.exports was not applied');
  if (JSON.stringify(packed.exports) !== JSON.stringify(withoutSource(ws.exports))) problems.push('published exports differ from the workspace exports (other than the source condition)');
  for (const f of ['license', 'repository', 'engines', 'description']) if (!packed[f]) problems.push(`no ${f}`);
  if (packed.license && packed.license !== 'Apache-2.0') problems.push(`license ${packed.license}`);
  if (packed.repository && !packed.repository.directory) problems.push('repository has no directory');
  if (!fileList.includes('README.md')) problems.push('no README.md');
  if (!fileList.includes('LICENSE')) problems.push('no LICENSE');
  else if (!licenseSame) problems.push('LICENSE differs from the root LICENSE');
  for (const f of referencedFiles(packed)) if (!fileList.includes(f)) problems.push(`${f} is referenced but not packed`);
  for (const f of fileList) if (/^(src|test)\//.test(f)) problems.push(`${f} is packed`);
  return problems;
}

/** Lists and reads a tarball with tar (present on every machine CI runs on). */
async function readTarball(tgz, into) {
  await mkdir(into, { recursive: true });
  const x = await run('tar', ['-xzf', tgz, '-C', into]);
  if (x.status !== 0) throw new Error(`tar -xzf ${tgz}: ${tail(x)}`);
  const base = join(into, 'package');
  const files = [];
  const walk = async (d) => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      if (e.isDirectory()) await walk(join(d, e.name));
      else files.push(relative(base, join(d, e.name)));
    }
  };
  await walk(base);
  return { base, files, pkg: JSON.parse(await readFile(join(base, 'package.json'), 'utf8')) };
}

/**
 * The whole proof. Returns the checks ({ group, name, ok, detail }) and the directory used;
 * `log` receives progress lines.
 */
export async function packInstall({ build = false, keep = false, log = () => {} } = {}) {
  const checks = [];
  const check = (group, name, ok, detail = '') => {
    checks.push({ group, name, ok: Boolean(ok), detail });
    log(`${ok ? 'ok  ' : 'FAIL'} ${group}: ${name}${detail ? ` (${detail})` : ''}`);
  };
  const work = await mkdtemp(join(tmpdir(), 'tensorport-pack-'));
  const started = Date.now();
  try {
    if (build) {
      log('building (turbo run build)');
      const b = await run('npx', ['turbo', 'run', 'build', '--output-logs=errors-only'], { cwd: ROOT, timeoutMs: 600_000 });
      if (b.status !== 0) throw new Error(`turbo run build failed:\n${tail(b)}`);
    }
    const packages = await publishablePackages();
    check('tarballs', 'publishable packages', packages.length >= 5, packages.map((p) => p.pkg.name).join(', '));

    // Pack every package (pnpm applies publishConfig and turns workspace:* into versions).
    const tarballs = join(work, 'tarballs');
    await mkdir(tarballs);
    const rootLicense = await readFile(join(ROOT, 'LICENSE'));
    const packedByName = new Map();
    // One pnpm for all: it applies publishConfig and turns workspace:* into versions (a pack per
    // package costs a pnpm start-up each). Tarballs are named <name without @, / as ->-<version>.tgz.
    const packed = [];
    const toPack = [];
    for (const p of packages) {
      if (await stat(join(p.dir, 'dist')).then(() => false, () => true)) packed.push({ p, error: 'no dist/: run npm run build (or pass --build)' });
      else toPack.push(p);
    }
    const r = await run(PNPM[0], [...PNPM[1], '-r', ...toPack.flatMap((p) => ['--filter', p.pkg.name]), 'pack', '--pack-destination', tarballs], { cwd: ROOT });
    const made = new Set(await readdir(tarballs));
    for (const p of toPack) {
      const file = `${p.pkg.name.replace(/^@/, '').replace('/', '-')}-${p.pkg.version}.tgz`;
      packed.push(made.has(file) ? { p, tgz: join(tarballs, file) } : { p, error: `no ${file} from pnpm -r pack: ${tail(r)}` });
    }
    for (const { p, tgz, error } of packed) {
      if (error) {
        check('tarballs', p.pkg.name, false, error);
        continue;
      }
      const t = await readTarball(tgz, join(work, 'unpacked', p.pkg.name.replace(/[@/]/g, '_')));
      const licenseSame = t.files.includes('LICENSE') && rootLicense.equals(await readFile(join(t.base, 'LICENSE')));
      const problems = checkTarball(p, t.pkg, t.files, licenseSame);
      check('tarballs', p.pkg.name, problems.length === 0, problems.join('; ') || `${relative(tarballs, tgz)}, ${t.files.length} files`);
      packedByName.set(p.pkg.name, { tgz, pkg: t.pkg, base: t.base });
    }
    log(`packed in ${((Date.now() - started) / 1000).toFixed(1)} s`);

    // Plain npm, in an empty directory outside the workspace; third-party dependencies come from the registry.
    const app = join(work, 'app');
    await mkdir(app);
    // Its own package.json: without one npm installs into the nearest parent holding node_modules
    // or a package.json (a stray /tmp/package.json made every package "missing" here once).
    await writeFile(join(app, 'package.json'), '{ "private": true }\n');
    // Outside the workspace, or node would find the workspace's node_modules from there.
    check('install', 'the install directory is outside the workspace', relative(ROOT, app).startsWith('..'), app);
    log(`npm install ${packedByName.size} tarballs in ${app}`);
    if (packedByName.size === 0) throw new Error('no tarball to install');
    const phase = (what) => log(`${what}: ${((Date.now() - started) / 1000).toFixed(1)} s since the start`);
    const inst = await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', ...[...packedByName.values()].map((p) => p.tgz)], { cwd: app });
    check('install', 'npm install ./*.tgz', inst.status === 0, inst.status === 0 ? `${((Date.now() - started) / 1000).toFixed(1)} s since the start` : tail(inst));
    if (inst.status !== 0) return { checks, dir: work };
    for (const [name, { pkg }] of packedByName) {
      const installed = JSON.parse(await readFile(join(app, 'node_modules', name, 'package.json'), 'utf8').catch(() => '{}'));
      check('install', `${name} installed from its tarball`, installed.version === pkg.version, `version ${installed.version}`);
    }

    // The CLI, as a user runs it.
    // Exactly one package provides the bin (two would fight over node_modules/.bin/tensorport): tensorport.
    const binOwners = [...packedByName].filter(([, { pkg }]) => typeof pkg.bin === 'object' && pkg.bin?.tensorport).map(([name]) => name);
    const binOwner = binOwners[0] ?? '';
    const wanted = 'tensorport';
    check('cli', `the tensorport bin comes from ${wanted} alone`, binOwners.length === 1 && binOwner === wanted, `bin from ${binOwners.join(', ') || 'no package'}`);
    const npx = (...args) => run('npx', ['--no-install', 'tensorport', ...args], { cwd: app });
    const help = await npx('--help');
    check('cli', 'npx tensorport --help', help.status === 0 && /Usage: tensorport/.test(help.stdout), help.status === 0 ? '' : tail(help));
    // The bin answers a lone --version from its own package.json (not through the command line): that file must ship.
    const cliVersion = JSON.parse(await readFile(join(ROOT, 'packages/cli/package.json'), 'utf8')).version;
    const version = await npx('--version');
    check('cli', 'npx tensorport --version', version.status === 0 && version.stdout === `${cliVersion}\n`, version.status === 0 ? JSON.stringify(version.stdout) : tail(version));
    await copyFile(TORCH_FIXTURE, join(app, 'model.pt'));
    const conv = await npx('convert', 'model.pt', 'model.safetensors');
    check('cli', 'npx tensorport convert model.pt model.safetensors', conv.status === 0, conv.status === 0 ? conv.stdout.trim().split('\n')[0] : tail(conv));
    // The workspace build of the command, given the same input, must write the same bytes.
    const wsBin = join(ROOT, 'packages/cli/bin/tensorport.cjs');
    const ref = join(work, 'reference.safetensors');
    const wsConv = await run('node', [wsBin, 'convert', TORCH_FIXTURE, ref], { cwd: work });
    const [a, b] = await Promise.all([readFile(join(app, 'model.safetensors')).catch(() => null), readFile(ref).catch(() => null)]);
    check('cli', 'installed and workspace CLI write the same bytes', wsConv.status === 0 && a !== null && b !== null && a.equals(b), a && b ? `${a.length} B` : tail(wsConv));
    const names = async (file) => {
      const r = await npx('inspect', file, '--json');
      try {
        return { r, names: JSON.parse(r.stdout).tensors.map((t) => t.name).sort() };
      } catch {
        return { r, names: null };
      }
    };
    const [pt, st] = await Promise.all([names('model.pt'), names('model.safetensors')]);
    check('cli', 'npx tensorport inspect model.pt --json', pt.names?.length > 0, pt.names ? pt.names.join(', ') : tail(pt.r));
    check('cli', 'npx tensorport inspect model.safetensors lists the same tensors', st.names !== null && JSON.stringify(st.names) === JSON.stringify(pt.names), st.names ? '' : tail(st.r));

    phase('cli checks done');
    // Every ```js block of every published README runs as an ES module, here, beside model.pt and
    // model.safetensors: the examples people copy use names the packages really export.
    for (const [name, { base }] of packedByName) {
      const readme = await readFile(join(base, 'README.md'), 'utf8').catch(() => '');
      const blocks = [...readme.matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
      const opened = readme.match(/^```js$/gm)?.length ?? 0;
      if (opened !== blocks.length) check('readme', `${name} README`, false, `${opened - blocks.length} js block(s) never closed`);
      for (const [i, code] of blocks.entries()) {
        const file = `readme-${name.replace(/^@/, '').replace('/', '-')}-${i + 1}.mjs`;
        await writeFile(join(app, file), code);
        const r = await run('node', [file], { cwd: app });
        check('readme', `${name} README example ${i + 1}`, r.status === 0, r.status === 0 ? '' : tail(r));
      }
    }

    phase('README examples done');
    // Every library entry point under import() and require().
    const entries = [];
    const esmFiles = {};
    const typedEntries = {};
    for (const [name, { pkg }] of packedByName) {
      for (const [sub, target] of Object.entries(pkg.exports ?? {})) {
        if (sub === './package.json') continue;
        const spec = sub === '.' ? name : `${name}/${sub.replace(/^\.\//, '')}`;
        if (JSON.stringify(target).includes('"types"')) typedEntries[spec] = true;
        if (NOT_LIBRARIES.has(spec)) continue;
        entries.push(spec);
        const esm = target?.import?.default ?? target?.import;
        if (typeof esm === 'string') esmFiles[spec] = join(app, 'node_modules', name, esm);
      }
    }
    await writeFile(join(app, 'runner.cjs'), RUNNER);
    await writeFile(join(app, 'check-esm.mjs'), ESM_RUNNER);
    await writeFile(join(app, 'check-cjs.cjs'), CJS_RUNNER);
    const ctx = { missing: join(work, 'does-not-exist.safetensors'), esmFiles };
    for (const [group, file] of [['esm', 'check-esm.mjs'], ['cjs', 'check-cjs.cjs']]) {
      const r = await run('node', [file, JSON.stringify([entries, ctx])], { cwd: app });
      let results = null;
      try {
        results = JSON.parse(r.stdout.trim().split('\n').pop());
      } catch {
        check(group, `node ${file}`, false, tail(r));
        continue;
      }
      for (const x of results) check(group, x.entry, x.ok, x.detail);
    }
    phase('entry points done');
    // Types as a TypeScript user resolves them (nodenext: the import and the require conditions),
    // with the declarations themselves checked too (skipLibCheck off), against the workspace's pinned tsc.
    for (const spec of entries) if (!typedEntries[spec]) check('types', `${spec} declares its types`, false, 'no "types" condition in its exports');
    const specs = Object.keys(typedEntries);
    const esmTypes = specs.map((s, i) => `import * as m${i} from '${s}';`).join('\n') + `\nexport const all = [${specs.map((_, i) => `m${i}`).join(', ')}];\n`;
    const cjsTypes = specs.map((s, i) => `import m${i} = require('${s}');`).join('\n') + `\nexport const all = [${specs.map((_, i) => `m${i}`).join(', ')}];\n`;
    await writeFile(join(app, 'types-esm.mts'), esmTypes);
    await writeFile(join(app, 'types-cjs.cts'), cjsTypes);
    await writeFile(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', strict: true, noEmit: true, skipLibCheck: false, typeRoots: [join(ROOT, 'node_modules/@types')], types: ['node'] },
        files: ['types-esm.mts', 'types-cjs.cts'],
      }),
    );
    const tsc = await run('node', [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: app });
    check('types', `tsc (nodenext) resolves and checks the declarations of ${specs.length} entry points under import and require`, tsc.status === 0, tsc.status === 0 ? '' : tail(tsc));
    check('time', 'whole run', true, `${((Date.now() - started) / 1000).toFixed(1)} s`);
    return { checks, dir: work };
  } catch (e) {
    check('setup', 'run', false, e.message);
    return { checks, dir: work };
  } finally {
    if (!keep) await rm(work, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const json = process.argv.includes('--json');
  const { checks, dir } = await packInstall({
    build: process.argv.includes('--build'),
    keep: process.argv.includes('--keep'),
    log: json ? () => {} : (line) => console.log(line),
  });
  const failed = checks.filter((c) => !c.ok);
  if (json) console.log(JSON.stringify({ checks, dir }));
  else console.log(`pack-install: ${checks.length - failed.length} passed, ${failed.length} failed${process.argv.includes('--keep') ? `; kept ${dir}` : ''}`);
  process.exit(failed.length ? 1 : 0);
}
