import { readdir, readFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { FIXTURES, MISSING_BROWSER, REQUIRE_BROWSER, SKIP_BROWSER, startHarness, type PageHarness } from './helpers/browser.ts';
import { convertInPage, pickedFiles, runCli, usePickedOpfs, withoutPickers, clearOpfsFrom } from './helpers/convert.ts';

const fixture = (p: string) => join(FIXTURES, p);
const SHARDED = fixture('safetensors/sharded');

if (SKIP_BROWSER && REQUIRE_BROWSER) {
  test('chromium is installed for the browser tests', () => {
    expect.fail(`TENSORPORT_REQUIRE_INTEROP=1 but ${MISSING_BROWSER}`);
  });
}

const py = await requirePython(['safetensors', 'torch']);

// Loads every safetensors file given with the Python package; prints name:dtype:shape lines.
const LOAD = `
import sys
from safetensors.torch import load_file
for p in sys.argv[1:]:
    for k, v in sorted(load_file(p).items()):
        print(f"{k}:{v.dtype}:{list(v.shape)}")
`;

// Python (torch) start-up and the CLI runs dominate; generous on a loaded 2-core machine.
describe.skipIf(SKIP_BROWSER)('Convert panel in headless chromium: the CLI’s bytes, written through file handles', { timeout: 120_000 }, () => {
  let h: PageHarness;
  let context: BrowserContext;
  let page: Page;
  let work: string;
  const requests: string[] = [];
  const errors: string[] = [];

  beforeAll(async () => {
    h = await startHarness();
    work = await mkdtemp(join(tmpdir(), 'tensorport-web-convert-'));
    context = await h.browser.newContext({ acceptDownloads: true });
    page = await context.newPage();
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    await page.goto(h.server.url);
    await page.waitForSelector('body[data-ready="1"]');
    // From here on, nothing may be requested: not by the page, the worker, or a download.
    const record = (r: Request) => requests.push(r.url());
    page.on('request', record);
    context.on('request', record);
    await context.route('**', (route) => {
      requests.push(route.request().url());
      return route.abort();
    });
  });
  afterAll(async () => {
    await h?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  async function open(...paths: string[]): Promise<void> {
    await page.evaluate(() => {
      document.body.dataset.state = 'idle';
    });
    await page.setInputFiles('#file', paths);
    await page.waitForSelector('body[data-state="done"]', { timeout: 30_000 });
    await clearOpfsFrom(page);
    await usePickedOpfs(page);
  }

  async function cli(input: string, out: string, ...flags: string[]): Promise<void> {
    const r = await runCli(['convert', input, out, ...flags]);
    expect(r.code, r.stderr).toBe(0);
  }

  async function loadInPython(...paths: string[]): Promise<string[]> {
    if (!py) return [];
    return (await runPython(py.exe, LOAD, { args: paths })).trim().split('\n');
  }

  test('a torch.save checkpoint → safetensors, and → .pt cast to bf16: byte-identical to tensorport convert', async () => {
    const input = fixture('torch/checkpoints/transformers.pt');
    await open(input);
    expect(await page.textContent('#convert-cli')).toBe('tensorport convert transformers.pt transformers.safetensors');
    expect(await convertInPage(page, { to: 'safetensors' })).toBe('done');
    expect(await page.getAttribute('#convert-valid', 'data-valid')).toBe('true');
    await cli(input, join(work, 'transformers.safetensors'));
    const cliBytes = await readFile(join(work, 'transformers.safetensors'));
    const written = await pickedFiles(page);
    expect([...written.keys()]).toEqual(['transformers.safetensors']);
    expect(written.get('transformers.safetensors')!.equals(cliBytes)).toBe(true);

    await clearOpfsFrom(page);
    expect(await convertInPage(page, { to: 'torch', dtype: 'bf16' })).toBe('done');
    await cli(input, join(work, 'transformers.pt'), '--dtype', 'bf16');
    const pt = (await pickedFiles(page)).get('transformers.pt')!;
    expect(pt.equals(await readFile(join(work, 'transformers.pt')))).toBe(true);

    if (py) {
      const dumped = join(work, 'page.safetensors');
      await import('node:fs/promises').then((fs) => fs.writeFile(dumped, written.get('transformers.safetensors')!));
      const lines = await loadInPython(dumped);
      // One Python load (torch start-up is slow on a loaded machine): the CLI's file has the same bytes anyway.
      expect(lines.length).toBe(Number(/(\d+) tensors/.exec((await page.textContent('#convert-result')) ?? '')?.[1]));
      expect(lines.length).toBeGreaterThan(0);
    }
  });

  test('an np.savez archive → safetensors cast to f16, and → npz', async () => {
    const input = fixture('npz/npz/savez.npz');
    await open(input);
    expect(await convertInPage(page, { to: 'safetensors', dtype: 'f16' })).toBe('done');
    expect(await page.getAttribute('#convert-valid', 'data-valid')).toBe('true');
    await cli(input, join(work, 'savez.safetensors'), '--dtype', 'f16');
    const st = (await pickedFiles(page)).get('savez.safetensors')!;
    expect(st.equals(await readFile(join(work, 'savez.safetensors')))).toBe(true);

    await clearOpfsFrom(page);
    expect(await convertInPage(page, { to: 'npz' })).toBe('done');
    await cli(input, join(work, 'savez.npz'));
    expect((await pickedFiles(page)).get('savez.npz')!.equals(await readFile(join(work, 'savez.npz')))).toBe(true);

    if (py) {
      const dumped = join(work, 'savez-page.safetensors');
      await import('node:fs/promises').then((fs) => fs.writeFile(dumped, st));
      const lines = await loadInPython(dumped);
      expect(lines.length).toBeGreaterThan(0);
      // Every float tensor was cast to F16 (integers are kept).
      expect(lines.filter((l) => /:torch\.(float|bfloat)/.test(l) && !l.includes(':torch.float16:'))).toEqual([]);
    }
  });

  test('a sharded safetensors model → sharded safetensors in a picked folder (shards + index), as the CLI shards it', async () => {
    const index = JSON.parse(await readFile(join(SHARDED, 'model.safetensors.index.json'), 'utf8'));
    const shards = [...new Set(Object.values(index.weight_map) as string[])].sort();
    await open(join(SHARDED, 'model.safetensors.index.json'), ...shards.map((s) => join(SHARDED, s)));
    // Small shards, so the output has several.
    expect(await convertInPage(page, { to: 'safetensors-sharded', shardMb: 0.002 })).toBe('done');
    expect(await page.getAttribute('#convert-valid', 'data-valid')).toBe('true');
    const out = join(work, 'sharded-out');
    await cli(join(SHARDED, 'model.safetensors.index.json'), `${out}/`, '--max-shard-size', '2000');
    const cliFiles = (await readdir(out)).sort();
    expect(cliFiles.length).toBeGreaterThan(2);
    const written = await pickedFiles(page);
    expect([...written.keys()].sort()).toEqual(cliFiles.map((f) => `folder-1/${f}`));
    for (const f of cliFiles) expect(written.get(`folder-1/${f}`)!.equals(await readFile(join(out, f))), f).toBe(true);
    if (py) {
      const shardsOut = cliFiles.filter((f) => f.endsWith('.safetensors'));
      const dir = join(work, 'page-sharded');
      const fs = await import('node:fs/promises');
      await fs.mkdir(dir);
      for (const f of shardsOut) await fs.writeFile(join(dir, f), written.get(`folder-1/${f}`)!);
      const lines = await loadInPython(...shardsOut.map((f) => join(dir, f)));
      expect(lines.map((l) => l.split(':')[0]).sort()).toEqual(Object.keys(index.weight_map).sort());
    }
  });

  test('without pickers: written to OPFS and offered as a download (blob: URL under the CSP), the same bytes', async () => {
    const input = fixture('torch/checkpoints/dtypes.pt');
    await open(input);
    await withoutPickers(page);
    expect(await convertInPage(page, { to: 'safetensors' })).toBe('done');
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#convert-download-0')]);
    expect(download.suggestedFilename()).toBe('dtypes.safetensors');
    const saved = join(work, 'downloaded.safetensors');
    await download.saveAs(saved);
    await cli(input, join(work, 'dtypes.safetensors'));
    expect((await readFile(saved)).equals(await readFile(join(work, 'dtypes.safetensors')))).toBe(true);
  });

  test('an unsafe pickle is refused as the CLI refuses it, naming the globals, and the picked file is removed', async () => {
    const input = fixture('torch/reference/evil_os_system.pt');
    await open(input);
    expect(await convertInPage(page, { to: 'safetensors' })).toBe('failed');
    expect(await page.getAttribute('#convert-error', 'data-code')).toBe('PickleDisallowedGlobal');
    const shown = (await page.textContent('#convert-error')) ?? '';
    const r = await runCli(['convert', input, join(work, 'evil.safetensors')]);
    expect(r.code).not.toBe(0);
    const globals = shown.match(/\b(posix|os|nt)\.system\b/g);
    expect(globals).not.toBeNull();
    for (const g of globals!) expect(r.stderr).toContain(g);
    expect([...(await pickedFiles(page)).keys()]).toEqual([]);
  });

  test('an MLX quantized model, dequantized (the library’s mlxDequantize transform): the bytes of tensorport dequantize', async () => {
    const dir = fixture('mlx/tiny-mixed');
    await open(join(dir, 'model.safetensors.index.json'), join(dir, 'model.safetensors'), join(dir, 'config.json'));
    expect(await page.isChecked('#convert-dequantize')).toBe(true);
    expect(await convertInPage(page, { to: 'safetensors' })).toBe('done');
    expect(await page.getAttribute('#convert-valid', 'data-valid')).toBe('true');
    const out = (await pickedFiles(page)).get('model.safetensors')!;
    const header = JSON.parse(out.subarray(8, 8 + Number(out.readBigUInt64LE(0))).toString('utf8'));
    const names = Object.keys(header).filter((k) => k !== '__metadata__');
    expect(names.filter((n) => n.endsWith('.scales') || n.endsWith('.biases'))).toEqual([]);
    expect(names.every((n) => header[n].dtype !== 'U32')).toBe(true);
    const r = await runCli(['dequantize', dir, join(work, 'deq.safetensors')]);
    expect(r.code, r.stderr).toBe(0);
    expect(out.equals(await readFile(join(work, 'deq.safetensors')))).toBe(true);
  });

  test('an MLX quantized model, dequantized to F32 in the page: the bytes of tensorport dequantize --dtype f32', async () => {
    const dir = fixture('mlx/tiny-mixed');
    await open(join(dir, 'model.safetensors.index.json'), join(dir, 'model.safetensors'), join(dir, 'config.json'));
    expect(await convertInPage(page, { to: 'safetensors', dtype: 'f32' })).toBe('done');
    expect(await page.textContent('#convert-cli')).toBe('tensorport dequantize model.safetensors.index.json model.safetensors --dtype f32');
    const out = (await pickedFiles(page)).get('model.safetensors')!;
    const r = await runCli(['dequantize', dir, join(work, 'deq32.safetensors'), '--dtype', 'f32']);
    expect(r.code, r.stderr).toBe(0);
    expect(out.equals(await readFile(join(work, 'deq32.safetensors')))).toBe(true);
  });

  for (const q of [
    { mode: 'affine', bits: 4, groupSize: 32, flags: ['--bits', '4', '--group-size', '32'] },
    { mode: 'mxfp4', flags: ['--mode', 'mxfp4'] },
  ] as const) {
    test(`a float checkpoint quantized in the page (${q.mode}, the library's quantizeStep): the bytes of tensorport quantize ${q.flags.join(' ')}`, async () => {
      const input = fixture('safetensors/transformer_shard.safetensors');
      await open(input);
      expect(await convertInPage(page, { to: 'safetensors', quantize: { mode: q.mode, ...('bits' in q ? { bits: q.bits, groupSize: q.groupSize } : {}) } })).toBe('done');
      expect(await page.getAttribute('#convert-valid', 'data-valid')).toBe('true');
      expect(await page.textContent('#convert-cli')).toBe(`tensorport quantize transformer_shard.safetensors transformer_shard.safetensors ${q.flags.join(' ')}`);
      expect(await page.textContent('#convert-result')).toContain('3 MLX layers');
      const out = (await pickedFiles(page)).get('transformer_shard.safetensors')!;
      const header = JSON.parse(out.subarray(8, 8 + Number(out.readBigUInt64LE(0))).toString('utf8'));
      expect(Object.keys(header).filter((n) => header[n].dtype === 'U32').length).toBe(3);
      const cliOut = join(work, `q-${q.mode}.safetensors`);
      const r = await runCli(['quantize', input, cliOut, ...q.flags]);
      expect(r.code, r.stderr).toBe(0);
      expect(out.equals(await readFile(cliOut))).toBe(true);
    });
  }

  test('quantized in the page into a folder: the mlx-lm model directory tensorport quantize writes', async () => {
    const input = fixture('safetensors/transformer_shard.safetensors');
    await open(input);
    expect(await convertInPage(page, { to: 'safetensors-sharded', shardMb: 0.008, quantize: { mode: 'affine', bits: 8, groupSize: 64 } })).toBe('done');
    const files = await pickedFiles(page);
    const cliDir = join(work, 'q-dir');
    const r = await runCli(['quantize', input, `${cliDir}/`, '--bits', '8', '--group-size', '64', '--max-shard-size', '8000']);
    expect(r.code, r.stderr).toBe(0);
    const names = (await readdir(cliDir)).sort();
    expect(names).toContain('model.safetensors.index.json');
    expect(names).toContain('config.json');
    expect(names.filter((n) => /^model-\d{5}-of-\d{5}\.safetensors$/.test(n)).length).toBeGreaterThan(1);
    const picked = new Map([...files].map(([k, v]) => [k.slice(k.indexOf('/') + 1), v]));
    expect([...picked.keys()].sort()).toEqual(names);
    for (const n of names) expect(picked.get(n)!.equals(await readFile(join(cliDir, n))), n).toBe(true);
  });

  test('a Llama model (weights, config, tokenizer) → GGUF Q8_0 in the page: the bytes of tensorport convert DIR out.gguf --gguf-type Q8_0', async () => {
    const dir = fixture('gguf/hf-models/llama');
    await open(join(dir, 'model.safetensors'), join(dir, 'config.json'), join(dir, 'tokenizer.json'), join(dir, 'tokenizer_config.json'));
    expect(await convertInPage(page, { to: 'gguf', ggufType: 'Q8_0' })).toBe('done');
    expect(await page.getAttribute('#convert-valid', 'data-valid')).toBe('true');
    expect(await page.textContent('#convert-cli')).toBe('tensorport convert model.safetensors model.gguf --gguf-type Q8_0');
    const out = (await pickedFiles(page)).get('model.gguf')!;
    const r = await runCli(['convert', dir, join(work, 'llama.gguf'), '--gguf-type', 'Q8_0']);
    expect(r.code, r.stderr).toBe(0);
    expect(out.equals(await readFile(join(work, 'llama.gguf')))).toBe(true);
    // The tokenizer came along: what llama.cpp needs to load it (packages/lib/test/llama-cpp.interop.test.ts runs it).
    expect(out.includes(Buffer.from('tokenizer.ggml.merges'))).toBe(true);
  });

  test('no request left the page during any conversion, and nothing failed in the console', () => {
    expect(requests).toEqual([]);
    expect(errors).toEqual([]);
  });
});
