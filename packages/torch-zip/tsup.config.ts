import { defineConfig } from 'tsup';

// One config: two configs writing dist/ can race on `clean`.
export default defineConfig({
  entry: { index: 'src/index.ts', node: 'src/node/index.ts' },
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
  platform: 'neutral',
  external: [/^node:/, /^@tensorport\//],
});
