import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Every first capture of `pattern` in the library sources (`packages/<pkg>/src/**.ts`), mapped to the
 * file it was found in: how the code tables are checked against what the sources actually use.
 */
export function capturesInSources(pattern: RegExp, options: { skipPackages?: readonly string[] } = {}): Map<string, string> {
  const packages = join(import.meta.dirname, '..', '..', '..');
  const skip = new Set(options.skipPackages ?? []);
  const found = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else if (e.name.endsWith('.ts')) for (const m of readFileSync(path, 'utf8').matchAll(pattern)) found.set(m[1]!, path);
    }
  };
  for (const pkg of readdirSync(packages)) {
    if (skip.has(pkg)) continue;
    try {
      walk(join(packages, pkg, 'src'));
    } catch {
      // a package without src/
    }
  }
  return found;
}
