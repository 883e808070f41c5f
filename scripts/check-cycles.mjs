#!/usr/bin/env node
// Two kinds of circle, both refused by `npm run lint`:
// - between workspace packages: a package that depends (dependencies, devDependencies,
//   peerDependencies or optionalDependencies) on one that depends back on it, however far round.
//   pnpm refuses to order such a workspace ("The tasks form a dependency cycle") and turbo's task
//   graph has no order for it either;
// - between the TypeScript sources of the packages (type-only imports count: a circle of types is
//   still two files that cannot be understood one without the other). Workspace package imports
//   resolve to the package's source entry, so circles across packages are found too.
//
//   node scripts/check-cycles.mjs [--root <workspace>]
//
// Exits 1 and prints each circle when there is one.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const at = process.argv.indexOf('--root');
const ROOT = at > 0 ? resolve(process.argv[at + 1]) : resolve(dirname(fileURLToPath(import.meta.url)), '..');
const PACKAGES = join(ROOT, 'packages');
const DEPENDENCY_FIELDS = ['dependencies', 'devDependencies', 'peerDependencies', 'optionalDependencies'];

/** Strongly connected components of more than one node (Tarjan), each sorted: the circles. */
function circlesOf(graph) {
  let index = 0;
  const stack = [];
  const on = new Set();
  const idx = new Map();
  const low = new Map();
  const circles = [];
  const visit = (v) => {
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
      // a package that depends on itself is a circle of one
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) circles.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return circles;
}

const manifests = readdirSync(PACKAGES)
  .map((dir) => ({ dir: join(PACKAGES, dir), file: join(PACKAGES, dir, 'package.json') }))
  .filter((p) => existsSync(p.file))
  .map((p) => ({ ...p, pkg: JSON.parse(readFileSync(p.file, 'utf8')) }));

// Packages: an edge for every dependency on another workspace package, whatever its field.
const names = new Set(manifests.map((m) => m.pkg.name));
const packageGraph = new Map(
  manifests.map(({ pkg }) => [pkg.name, [...new Set(DEPENDENCY_FIELDS.flatMap((f) => Object.keys(pkg[f] ?? {})).filter((d) => names.has(d)))]]),
);
const packageCircles = circlesOf(packageGraph);

// Sources: package name + subpath → source file, from each package.json's `@tensorport/source` conditions.
const entries = new Map();
for (const { dir, pkg } of manifests) {
  for (const [sub, target] of Object.entries(pkg.exports ?? {})) {
    const src = typeof target === 'object' && target !== null ? target['@tensorport/source'] : undefined;
    if (typeof src === 'string') entries.set(sub === '.' ? pkg.name : `${pkg.name}/${sub.slice(2)}`, join(dir, src));
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

const files = manifests.flatMap(({ dir }) => (existsSync(join(dir, 'src')) ? sources(join(dir, 'src')) : []));
const fileGraph = new Map();
for (const f of files) {
  const text = readFileSync(f, 'utf8');
  const deps = new Set();
  for (const m of text.matchAll(IMPORT)) {
    const target = resolveImport(f, m[1] ?? m[2] ?? m[3]);
    if (target && target !== f) deps.add(target);
  }
  fileGraph.set(f, [...deps]);
}
const fileCircles = circlesOf(fileGraph);

for (const c of packageCircles) console.log(`package cycle: ${c.join(' <-> ')}`);
for (const c of fileCircles) console.log(`circle: ${c.map((f) => relative(ROOT, f)).join(' <-> ')}`);
if (packageCircles.length + fileCircles.length === 0) {
  console.log(`check-cycles: no package cycle among ${packageGraph.size} workspace packages, no import circle among ${fileGraph.size} source files`);
} else {
  console.log(`check-cycles: ${packageCircles.length} package cycle(s), ${fileCircles.length} import circle(s)`);
  process.exitCode = 1;
}
