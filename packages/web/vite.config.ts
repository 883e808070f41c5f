import { defaultClientConditions, defineConfig } from 'vite';

export default defineConfig({
  // Relative asset URLs: the page works from any directory a static server exposes.
  base: './',
  // Bundle workspace packages from their TypeScript source (see vitest.shared.ts).
  resolve: { conditions: ['@tensorport/source', ...defaultClientConditions] },
  // The page loads all its code at once and then makes no request (test/e2e.test.ts): a library's
  // lazy import (fflate, loaded on first use to spare the CLI's start-up) is inlined, not a chunk.
  worker: { format: 'es', rollupOptions: { output: { inlineDynamicImports: true } } },
  build: {
    target: 'es2022',
    outDir: 'dist',
    emptyOutDir: true,
    // Every asset stays a file: the CSP allows scripts and styles from 'self' only, no data: or inline.
    assetsInlineLimit: 0,
    // The polyfill is an inline-free module, but modern browsers need none; keep the output minimal.
    modulePreload: { polyfill: false },
    rollupOptions: { output: { inlineDynamicImports: true } },
  },
});
