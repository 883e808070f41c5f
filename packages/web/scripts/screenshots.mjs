#!/usr/bin/env node
// Regenerates docs/screenshots/*.png: builds the page into a temp dir, serves it on loopback and
// photographs it in headless Chromium with fixtures loaded, in the light and the dark theme.
// Usage: node packages/web/scripts/screenshots.mjs [name-filter]   (CHROMIUM_PATH overrides /usr/bin/chromium)
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { build } from 'vite';
import { serveStatic } from '../server/serve.mjs';

const pkg = join(dirname(fileURLToPath(import.meta.url)), '..');
const repo = join(pkg, '..', '..');
const out = join(repo, 'docs', 'screenshots');
/** @param {string} p */
const fixture = (p) => join(repo, 'fixtures', p);

/** @type {Array<{ file: string; scheme: 'light' | 'dark'; files: string[]; convert?: boolean }>} */
const SHOTS = [
  {
    file: 'inspector-light.png',
    scheme: 'light',
    files: ['mlx/tiny-mixed/model.safetensors.index.json', 'mlx/tiny-mixed/model.safetensors', 'mlx/tiny-mixed/config.json'],
  },
  {
    file: 'inspector-dark.png',
    scheme: 'dark',
    files: ['mlx/tiny-mixed/model.safetensors.index.json', 'mlx/tiny-mixed/model.safetensors', 'mlx/tiny-mixed/config.json'],
  },
  { file: 'unsafe-light.png', scheme: 'light', files: ['torch/reference/evil_os_system.pt'] },
  { file: 'unsafe-dark.png', scheme: 'dark', files: ['torch/reference/evil_os_system.pt'] },
  // The Convert panel after a torch.save checkpoint was converted (to OPFS: no native picker here).
  { file: 'convert-light.png', scheme: 'light', files: ['torch/checkpoints/transformers.pt'], convert: true },
  { file: 'convert-dark.png', scheme: 'dark', files: ['torch/checkpoints/transformers.pt'], convert: true },
];

const dist = await mkdtemp(join(tmpdir(), 'tensorport-shots-'));
await build({ root: pkg, configFile: join(pkg, 'vite.config.ts'), logLevel: 'warn', build: { outDir: dist, emptyOutDir: true } });
const server = await serveStatic(dist, { port: 0 });
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--font-render-hinting=none'],
});
try {
  await mkdir(out, { recursive: true });
  for (const shot of SHOTS.filter((s) => s.file.includes(process.argv[2] ?? ''))) {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1 });
    await page.emulateMedia({ colorScheme: shot.scheme, reducedMotion: 'reduce' });
    await page.goto(server.url);
    await page.waitForSelector('body[data-ready="1"]');
    await page.setInputFiles('#file', shot.files.map(fixture));
    await page.waitForSelector('body[data-state="done"]');
    await page.mouse.move(0, 0);
    if (shot.convert) {
      await page.evaluate(() => {
        const w = /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (window));
        w.showSaveFilePicker = async (/** @type {{ suggestedName: string }} */ o) => (await navigator.storage.getDirectory()).getFileHandle(o.suggestedName, { create: true });
      });
      await page.selectOption('#convert-dtype', 'bf16');
      await page.click('#convert-start');
      await page.waitForSelector('body[data-convert="done"]');
      await page.mouse.move(0, 0);
      await page.locator('#convert').screenshot({ path: join(out, shot.file) });
    } else {
      await page.screenshot({ path: join(out, shot.file), fullPage: true });
    }
    console.log(`docs/screenshots/${shot.file}`);
    await page.close();
  }
} finally {
  await browser.close();
  await server.close();
  await rm(dist, { recursive: true, force: true });
}
