import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { build } from 'vite';
import { serveStatic, type StaticServer } from '../../server/serve.mjs';

/**
 * Browser tests need Debian's chromium (`apt-get install -y chromium`; CHROMIUM_PATH overrides).
 * Without it they are skipped with a message, unless TENSORPORT_REQUIRE_INTEROP=1 (CI): then
 * they fail.
 */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const HAVE_CHROMIUM = existsSync(CHROMIUM);
export const REQUIRE_BROWSER = process.env.TENSORPORT_REQUIRE_INTEROP === '1';
export const SKIP_BROWSER = !HAVE_CHROMIUM;
export const MISSING_BROWSER = `no chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`;
if (SKIP_BROWSER && !REQUIRE_BROWSER) console.log(`web: browser tests skipped: ${MISSING_BROWSER}`);

export const PACKAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const REPO_DIR = join(PACKAGE_DIR, '..', '..');
export const FIXTURES = join(REPO_DIR, 'fixtures');

/** Flags for a quiet, offline headless run: no background traffic of Chromium's own. */
export const LAUNCH_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export interface PageHarness {
  browser: Browser;
  server: StaticServer;
  close(): Promise<void>;
}

/** Builds the page with vite into a temp dir (no prior build needed) and serves it. */
export async function servePage(): Promise<{ server: StaticServer; outDir: string }> {
  const outDir = await mkdtemp(join(tmpdir(), 'tensorport-web-'));
  await build({ root: PACKAGE_DIR, configFile: join(PACKAGE_DIR, 'vite.config.ts'), logLevel: 'warn', build: { outDir, emptyOutDir: true } });
  return { server: await serveStatic(outDir, { port: 0, host: '127.0.0.1' }), outDir };
}

/** The page built and served, and Chromium started. */
export async function startHarness(): Promise<PageHarness> {
  const { server, outDir } = await servePage();
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: LAUNCH_ARGS });
  return {
    browser,
    server,
    async close() {
      await browser.close();
      await server.close();
      await rm(outDir, { recursive: true, force: true });
    },
  };
}

export interface ShownRow {
  name: string;
  dtype: string;
  shape: string;
  params: string;
  size: string;
  range: string;
}

/**
 * Every row of the (virtualised) tensor table, collected by scrolling it a screen at a time, in
 * display order. Also returns the most rows that were in the DOM at once.
 */
export const COLLECT_ROWS = async (): Promise<{ rows: ShownRow[]; maxInDom: number }> => {
  const vp = document.querySelector<HTMLElement>('.viewport');
  if (!vp) return { rows: [], maxInDom: 0 };
  const frame = () => new Promise<void>((r) => requestAnimationFrame(() => r()));
  const seen = new Map<number, ShownRow>();
  let maxInDom = 0;
  vp.scrollTop = 0;
  await frame();
  await frame();
  for (;;) {
    const rows = vp.querySelectorAll('.tr');
    maxInDom = Math.max(maxInDom, rows.length);
    for (const row of rows) {
      const c = [...row.children].map((x) => x.textContent ?? '');
      seen.set(Number(row.getAttribute('aria-rowindex')), { name: row.children[0]!.getAttribute('title') ?? '', dtype: c[1]!, shape: c[2]!, params: c[3]!, size: c[4]!, range: c[5]! });
    }
    if (vp.scrollTop + vp.clientHeight >= vp.scrollHeight - 1) break;
    vp.scrollTop += vp.clientHeight;
    await frame();
    await frame();
  }
  return { rows: [...seen.entries()].sort((a, b) => a[0] - b[0]).map((e) => e[1]), maxInDom };
};
