import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';

/** Sources that must also run in a browser worker: this package and the core's ZIP layer. */
const DIRS = [new URL('../src/', import.meta.url).pathname, new URL('../../core/src/zip/', import.meta.url).pathname];

it('imports nothing from node: (browser workers)', () => {
  const files = DIRS.flatMap((d) => readdirSync(d, { recursive: true }).map((f) => join(d, String(f)))).filter((f) => f.endsWith('.ts'));
  expect(files.length).toBeGreaterThan(15);
  for (const f of files) {
    const text = readFileSync(f, 'utf8');
    expect(text, f).not.toMatch(/from\s+['"]node:|require\(['"]node:|import\(['"]node:/);
    expect(text, f).not.toMatch(/\bBuffer\./);
  }
});
