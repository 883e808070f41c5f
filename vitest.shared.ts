import { defaultClientConditions, defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

/**
 * Every workspace package maps this export condition to its TypeScript source,
 * so tests and type checks run against src/ without building dependencies first.
 * Node never sets it, so built entry points stay on dist/.
 */
export const SOURCE_CONDITION = '@tensorport/source';

export default defineConfig({
  resolve: { conditions: [SOURCE_CONDITION, ...defaultClientConditions] },
  // Node tests run through Vite's SSR environment: resolve.conditions alone is not enough.
  ssr: { resolve: { conditions: [SOURCE_CONDITION, ...defaultServerConditions] } },
  test: {
    include: ['test/**/*.test.ts'],
    // Interop tests start Python: importing torch took 21 s, torch + transformers 38 s, while the
    // other packages' suites ran beside them on 2 cores. Limits catch hangs, not slowness.
    testTimeout: 180_000,
    hookTimeout: 180_000,
    // The json report feeds scripts/test-summary.mjs (one "N passed, N failed" line for CI).
    reporters: ['default', 'json'],
    outputFile: { json: '.vitest-results.json' },
  },
});
