#!/usr/bin/env node
// Peak memory of an in-browser conversion (docs/benchmarks.md): a sparse safetensors checkpoint of
// SIZE GiB (default 4.5) converted by the inspector page in headless Chromium, written to OPFS of a
// temp profile (deleted after). Prints the JS heap peak (CDP Performance.getMetrics) and the
// renderer's peak RSS (VmHWM; the page and its worker share the renderer), and MB/s.
// Usage: node bench/web-convert.mjs [GiB] [dtype]      (build nothing first: vite builds the page)
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { serveStatic } from '../packages/web/server/serve.mjs';
import { browserPidFor, sampleMemory, writeBigSafetensors } from '../packages/web/scripts/convert-memory.mjs';

const gib = Number(process.argv[2] ?? 4.5);
const dtype = process.argv[3] ?? '';
const size = Math.round((gib * 2 ** 30) / 4096) * 4096;
const pkg = join(dirname(fileURLToPath(import.meta.url)), '..', 'packages', 'web');
// playwright-core and vite are dependencies of packages/web, not of the repository root.
const fromWeb = createRequire(join(pkg, 'package.json'));
const { chromium } = fromWeb('playwright-core');
const vite = await import(pathToFileURL(fromWeb.resolve('vite')).href);
const build = vite.build ?? vite.default.build;
const work = await mkdtemp(join(tmpdir(), 'tensorport-bench-web-'));
const profile = join(work, 'profile');
const dist = join(work, 'dist');
const input = join(work, 'big.safetensors');
await writeBigSafetensors(input, size, 16);
await build({ root: pkg, configFile: join(pkg, 'vite.config.ts'), logLevel: 'warn', build: { outDir: dist, emptyOutDir: true } });
const server = await serveStatic(dist, { port: 0 });
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  const page = context.pages()[0] ?? (await context.newPage());
  await page.goto(server.url);
  await page.waitForSelector('body[data-ready="1"]');
  await page.setInputFiles('#file', input);
  await page.waitForSelector('body[data-state="done"]', { timeout: 120_000 });
  await page.evaluate(() => {
    const w = /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (window));
    w.showSaveFilePicker = async (/** @type {{ suggestedName: string }} */ o) => (await navigator.storage.getDirectory()).getFileHandle(o.suggestedName, { create: true });
  });
  await page.selectOption('#convert-dtype', dtype);
  const memory = sampleMemory(await context.newCDPSession(page), await browserPidFor(profile));
  const t0 = Date.now();
  await page.click('#convert-start');
  await page.waitForFunction(() => ['done', 'failed', 'cancelled'].includes(document.body.dataset.convert ?? ''), undefined, { timeout: 3_600_000 });
  const seconds = (Date.now() - t0) / 1000;
  const peaks = await memory.stop();
  const state = await page.getAttribute('body', 'data-convert');
  const valid = await page.getAttribute('#convert-valid', 'data-valid').catch(() => null);
  const line = await page.textContent('#convert-line');
  const mib = (/** @type {number} */ n) => (n / 2 ** 20).toFixed(1);
  console.log(JSON.stringify({ input: `${gib} GiB safetensors (${size} bytes, F32 zeros)`, dtype: dtype || 'kept', state, valid, seconds, mbps: +(size / 1e6 / seconds).toFixed(1), jsHeapPeakMiB: +mib(peaks.jsHeapPeak), rendererPeakRssMiB: +mib(peaks.rendererPeak), page: line }, null, 1));
} finally {
  await context.close();
  await server.close();
  await rm(work, { recursive: true, force: true });
}
