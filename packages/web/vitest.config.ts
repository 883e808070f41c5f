import { defineConfig, mergeConfig } from 'vitest/config';
import shared from '../../vitest.shared.ts';

// The browser test builds the page and starts Chromium in beforeAll.
export default mergeConfig(shared, defineConfig({ test: { hookTimeout: 120_000 } }));
