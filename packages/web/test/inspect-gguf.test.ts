/** The page's worker logic on GGUF: a big vocabulary is counted, not listed, and only the header is read. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { inspectFiles } from '../src/inspect/index.ts';
import { FIXTURES } from './helpers/browser.ts';
import { fileOf } from './helpers/files.ts';

const py = await requirePython(['gguf', 'numpy']);
const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

describe('inspectFiles on GGUF', () => {
  test('kitchen.gguf (GGUFWriter): ggml types, element shapes, metadata', async () => {
    const r = await inspectFiles([await fileOf(join(FIXTURES, 'gguf/kitchen.gguf'))]);
    expect(r.valid, JSON.stringify(r.errors)).toBe(true);
    expect(r.format).toBe('gguf');
    const q = r.tensors.find((t) => t.name === 'e.q4_k')!;
    expect(q).toMatchObject({ dtype: 'Q4_K', shape: [3, 256], params: 768, bytes: 432 });
    expect(r.metadata!.find(([k]) => k === 'general.architecture')?.[1]).toBe('llama');
    expect(r.notes.join(' ')).toMatch(/architecture llama.*bits per weight/);
  });

  test.skipIf(!py)('a 30,000-token vocabulary and 4 MB of weights: header pages read, arrays cut', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'web-gguf-'));
    dirs.push(dir);
    const path = join(dir, 'vocab.gguf');
    const header = Number(await runPython(py!.exe, `
import sys, numpy as np, gguf
w = gguf.GGUFWriter(sys.argv[1], 'llama')
w.add_context_length(4096)
w.add_tokenizer_model('gpt2')
w.add_token_list([f'token_{i}' for i in range(30000)])
w.add_token_merges([f'a{i} b{i}' for i in range(10000)])
w.add_tensor('token_embd.weight', np.zeros((1024, 1024), dtype=np.float32))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
r = gguf.GGUFReader(sys.argv[1])
print(r.tensors[0].data_offset)
`, { args: [path] }));
    const r = await inspectFiles([await fileOf(path)]);
    expect(r.valid, JSON.stringify(r.errors)).toBe(true);
    expect(r.totalBytes).toBeGreaterThan(header + 4 * 2 ** 20 - 1);
    // The header (about 0.6 MB of strings) and at most one page beyond it; never the 4 MB of data.
    expect(r.bytesRead).toBeGreaterThanOrEqual(header);
    expect(r.bytesRead).toBeLessThanOrEqual(header + 256 * 1024);
    const tokens = r.metadata!.find(([k]) => k === 'tokenizer.ggml.tokens')![1];
    expect(tokens.length).toBeLessThan(400);
    expect(tokens).toMatch(/"… 29984 more"\]$/);
    expect(r.notes.join(' ')).toMatch(/context length 4096, tokenizer gpt2 with 30000 tokens and 10000 merges/);
  });
});
