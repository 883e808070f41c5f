import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { defineConfig, type Options } from 'tsup';

export interface PackageBuild {
  /** Entry name (dist/<name>.js, .cjs, .d.ts) to source file. */
  entry: Record<string, string>;
  /** 'neutral' for library code that also runs in a browser worker; 'node' for the CLI. */
  platform?: 'neutral' | 'node';
  /** Entries that get type declarations (default: all). */
  dts?: Options['dts'];
  /** Entries whose `import` in Node goes to the CJS build (default: all); see nodeWrapper. */
  nodeEntries?: readonly string[];
}

/**
 * The ESM file the "node" export condition points `import` at: it re-exports the CJS build, so a
 * Node program that both imports and requires a package (directly or through a dependency) loads
 * one copy of it, and one TensorportError class. Browsers and bundlers keep the real ESM build.
 * Node finds the names through the `exports.X = ...` lines of tsup's CJS output.
 */
export const nodeWrapper = (name: string): string => `export * from './${name}.cjs';\n`;

/**
 * The build of every published package (docs/packaging.md), one config per package: two configs
 * writing dist/ can race on `clean`.
 * - `splitting` in both formats: code that two entries share (index and node) is one chunk, so
 *   `@tensorport/core` and `@tensorport/core/node` throw the same TensorportError under require()
 *   too (tsup splits only ESM by default).
 * - other packages stay external: tsup leaves dependencies out of the bundle; the pattern below
 *   also covers a workspace package that is only a devDependency, which must never be inlined.
 */
export function packageConfig({ entry, platform = 'neutral', dts = true, nodeEntries = Object.keys(entry) }: PackageBuild) {
  return defineConfig({
    entry,
    format: ['esm', 'cjs'],
    splitting: true,
    dts,
    clean: true,
    sourcemap: true,
    target: 'node20',
    platform,
    external: [/^node:/, /^@tensorport\//, /^tensorport(\/|$)/],
    async onSuccess() {
      await Promise.all(nodeEntries.map((name) => writeFile(join('dist', `${name}.node.js`), nodeWrapper(name))));
    },
  });
}
