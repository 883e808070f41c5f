import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { extname, join, normalize } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { defaultClientConditions, build } from 'vite';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { convertPath } from '../src/node/index.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SKIP = !existsSync(CHROMIUM);
const REPO = join(import.meta.dirname, '../../..');
const TORCH = join(REPO, 'fixtures/torch/checkpoints/transformers.pt');
const TYPES: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript' };

if (SKIP && process.env.TENSORPORT_REQUIRE_INTEROP === '1') {
  test('chromium is installed for the browser tests', () => {
    expect.fail(`TENSORPORT_REQUIRE_INTEROP=1 but no chromium at ${CHROMIUM}`);
  });
}

describe.skipIf(SKIP)('the tensorport library in Chromium (a Vite-built page, no CLI)', () => {
  let out: string;
  let server: Server;
  let url: string;
  let browser: Browser;

  beforeAll(async () => {
    out = await mkdtemp(join(tmpdir(), 'tensorport-page-'));
    // The library resolves to its TypeScript source, as in every workspace test; anything Node-only
    // in its import graph would fail this build.
    await build({
      root: join(import.meta.dirname, 'browser'),
      configFile: false,
      logLevel: 'warn',
      resolve: { conditions: ['@tensorport/source', ...defaultClientConditions] },
      build: { outDir: out, emptyOutDir: true, target: 'es2022', modulePreload: { polyfill: false } },
    });
    server = createServer((req, res) => {
      const path = normalize(join(out, new URL(req.url ?? '/', 'http://x').pathname.replace(/\/$/, '/index.html')));
      if (!path.startsWith(out)) return void res.writeHead(403).end();
      readFile(path).then(
        (body) => res.writeHead(200, { 'content-type': TYPES[extname(path)] ?? 'application/octet-stream' }).end(body),
        () => res.writeHead(404).end(),
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const address = server.address();
    url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/`;
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'] });
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise((r) => server?.close(r));
    if (out) await rm(out, { recursive: true, force: true });
  });

  test('converts a picked torch.save file to safetensors in memory: the same bytes as tensorport convert', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(url);
    await page.waitForSelector('body[data-ready="1"]');
    await page.setInputFiles('#file', TORCH);
    const inPage = await page.evaluate(() => (globalThis as unknown as { convertPicked(): Promise<{ from: string; files: string[]; bytes: number; length: number; sha256: string }> }).convertPicked());
    expect(errors).toEqual([]);

    const dir = await mkdtemp(join(tmpdir(), 'tensorport-cli-'));
    try {
      const cli = await convertPath({ input: TORCH, output: join(dir, 'model.safetensors') });
      const bytes = await readFile(join(dir, 'model.safetensors'));
      expect(inPage).toEqual({ from: cli.from, files: ['model.safetensors'], bytes: cli.bytes, length: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') });
      expect(inPage.from).toBe('torch-zip');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('a directory handle holding an old sharded write: refused without force naming the shards and index, removed with force; model_ema.safetensors stays', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(url);
    await page.waitForSelector('body[data-ready="1"]');
    await page.setInputFiles('#file', TORCH);
    const r = await page.evaluate(() => (globalThis as unknown as { staleShards(): Promise<{ refused: { code: string; message: string; path?: string } | null; afterRefusal: string[]; afterForce: string[] }> }).staleShards());
    expect(errors).toEqual([]);
    const old = ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors', 'model.safetensors.index.json'];
    expect(r.refused).toMatchObject({ code: 'OutputExists', path: `stale/${old[0]}` });
    expect(r.refused!.message).toContain(`so do ${old[1]}, ${old[2]}`);
    expect(r.afterRefusal).toEqual([...old, 'model_ema.safetensors']);
    expect(r.afterForce).toEqual(['model.safetensors', 'model_ema.safetensors']);
  });
});
