#!/usr/bin/env node
// The layers, as imports (part of `npm run lint`):
// - a package's sources import only what its package.json declares (dependencies or
//   peerDependencies; a devDependency is for tests) and Node's built-ins;
// - the command line (packages/cli/src) is a shell: argument parsing, rendering and exit codes.
//   It imports the library face and nothing below it, so every capability it has, a library user
//   and the page have too (docs/architecture.md, "Packages and layers").
//
//   node scripts/check-layers.mjs [--root <workspace>]
//
// Exits 1 and prints each import that breaks a rule.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const at = process.argv.indexOf('--root');
const ROOT = at > 0 ? resolve(process.argv[at + 1]) : resolve(dirname(fileURLToPath(import.meta.url)), '..');
const PACKAGES = join(ROOT, 'packages');

/** What the shell may import: the library face, its parser, the page's server (for `serve`), path strings for rendering. */
const SHELL = { dir: 'cli', imports: new Set(['commander', '@tensorport/lib', '@tensorport/lib/node', '@tensorport/web/server', 'node:path']) };

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;'"]*?from\s*['"]([^'"]+)['"]|(?:^|\n)\s*import\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;
const BUILTINS = new Set(builtinModules);

function sources(dir, out = []) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) {
      if (name !== 'node_modules' && name !== 'dist') sources(p, out);
    } else if (/\.(ts|mts|mjs|js)$/.test(p) && !p.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** `@scope/name/sub` → `@scope/name`; `name/sub` → `name`. */
const packageOf = (spec) => spec.split('/').slice(0, spec.startsWith('@') ? 2 : 1).join('/');

const problems = [];
let checked = 0;
for (const dir of readdirSync(PACKAGES).sort()) {
  const file = join(PACKAGES, dir, 'package.json');
  const src = join(PACKAGES, dir, 'src');
  if (!existsSync(file) || !existsSync(src)) continue;
  const pkg = JSON.parse(readFileSync(file, 'utf8'));
  const declared = new Set([...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.peerDependencies ?? {})]);
  for (const f of sources(src)) {
    checked++;
    const where = relative(ROOT, f);
    for (const m of readFileSync(f, 'utf8').matchAll(IMPORT)) {
      const spec = m[1] ?? m[2] ?? m[3];
      if (spec.startsWith('.')) continue;
      const builtin = spec.startsWith('node:') || BUILTINS.has(packageOf(spec));
      if (dir === SHELL.dir && !SHELL.imports.has(spec)) {
        problems.push(`${where}: imports '${spec}': the command line is a shell over the library; it may import ${[...SHELL.imports].join(', ')}`);
      } else if (!builtin && !declared.has(packageOf(spec)) && packageOf(spec) !== pkg.name) {
        problems.push(`${where}: imports '${spec}', which ${pkg.name}'s package.json does not declare (dependencies or peerDependencies)`);
      }
    }
  }
}

for (const p of problems) console.log(p);
if (problems.length === 0) console.log(`check-layers: ${checked} source files import only what their package declares; the command line only the library`);
else {
  console.log(`check-layers: ${problems.length} import(s) across a layer`);
  process.exitCode = 1;
}
