#!/usr/bin/env node
// Finds import circles among the TypeScript sources of every package (type-only imports count:
// a circle of types is still two files that cannot be understood one without the other).
// Workspace package imports resolve to the package's source entry, so circles across packages
// are found too. Exits 1 and prints each circle when there is one.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const PACKAGES = join(ROOT, 'packages');

/** package name + subpath → source file, from each package.json's `@tensorport/source` conditions. */
const entries = new Map();
for (const dir of readdirSync(PACKAGES)) {
  const pkgPath = join(PACKAGES, dir, 'package.json');
  if (!existsSync(pkgPath)) continue;
  const pkg = JSON.parse(readFileSync(pkgPath, 'utf8'));
  for (const [sub, target] of Object.entries(pkg.exports ?? {})) {
    const src = typeof target === 'object' && target !== null ? target['@tensorport/source'] : undefined;
    if (typeof src === 'string') entries.set(sub === '.' ? pkg.name : `${pkg.name}/${sub.slice(2)}`, join(PACKAGES, dir, src));
  }
}

function sources(dir, out = []) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) {
      if (name !== 'node_modules' && name !== 'dist') sources(p, out);
    } else if (p.endsWith('.ts') && !p.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;'"]*?from\s*['"]([^'"]+)['"]|(?:^|\n)\s*import\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

function resolveImport(from, spec) {
  if (spec.startsWith('.')) {
    const p = resolve(dirname(from), spec);
    return existsSync(p) ? p : null;
  }
  return entries.get(spec) ?? null;
}

const files = readdirSync(PACKAGES).flatMap((d) => (existsSync(join(PACKAGES, d, 'src')) ? sources(join(PACKAGES, d, 'src')) : []));
const graph = new Map();
for (const f of files) {
  const text = readFileSync(f, 'utf8');
  const deps = new Set();
  for (const m of text.matchAll(IMPORT)) {
    const target = resolveImport(f, m[1] ?? m[2] ?? m[3]);
    if (target && target !== f) deps.add(target);
  }
  graph.set(f, [...deps]);
}

// Tarjan's strongly connected components: every component with more than one file is a circle.
let index = 0;
const stack = [];
const on = new Set();
const idx = new Map();
const low = new Map();
const circles = [];
function visit(v) {
  idx.set(v, index);
  low.set(v, index++);
  stack.push(v);
  on.add(v);
  for (const w of graph.get(v) ?? []) {
    if (!graph.has(w)) continue;
    if (!idx.has(w)) {
      visit(w);
      low.set(v, Math.min(low.get(v), low.get(w)));
    } else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
  }
  if (low.get(v) === idx.get(v)) {
    const scc = [];
    let w;
    do {
      w = stack.pop();
      on.delete(w);
      scc.push(w);
    } while (w !== v);
    if (scc.length > 1) circles.push(scc);
  }
}
for (const v of graph.keys()) if (!idx.has(v)) visit(v);

if (circles.length === 0) {
  console.log(`check-cycles: no import circles among ${graph.size} source files`);
} else {
  for (const c of circles) console.log(`circle: ${c.map((f) => relative(ROOT, f)).sort().join(' <-> ')}`);
  console.log(`check-cycles: ${circles.length} circle(s)`);
  process.exitCode = 1;
}
