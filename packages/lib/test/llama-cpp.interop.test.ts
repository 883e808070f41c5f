/**
 * HF model directory → GGUF → the real llama.cpp (issue 30). Tiny random Llama, Mistral and Qwen2
 * models with trained tokenizers (fixtures/gguf/make_hf_models.py, made with transformers) are
 * converted by convertPath; llama.cpp (node-llama-cpp's prebuilt CPU build, helpers/llama-cpp.ts)
 * loads each GGUF, computes every prompt position's logits and tokenizes three strings. Compared
 * with what transformers computed when the fixtures were made (hf-models/<arch>.expected.json):
 * - F32, F16: every logit within 1e-3;
 * - Q8_0, Q4_0: within 1e-2 of transformers running gguf-py's own quantization of the same weights
 *   (llama.cpp also rounds activations to 8 bits), and no further from the float model than twice
 *   gguf-py's own error (+1e-3);
 * - tokens: llama.cpp's ids equal the HF tokenizer's.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { convertPath } from '../src/node/index.ts';
import { requireLlamaCpp, runLlamaCpp } from './helpers/llama-cpp.ts';

const REPO = join(import.meta.dirname, '../../..');
const MODELS = join(REPO, 'fixtures/gguf/hf-models');
const prefix = requireLlamaCpp();

interface Expected {
  prompt: number[];
  logits: number[][];
  logits_Q8_0: number[][];
  logits_Q4_0: number[][];
  strings: Array<{ text: string; ids: number[] }>;
}

function maxAbsDiff(a: readonly (readonly (number | null)[])[], b: readonly (readonly number[])[]): number {
  expect(a.length).toBe(b.length);
  let worst = 0;
  for (let i = 0; i < b.length; i++) {
    expect(a[i]!.length).toBe(b[i]!.length);
    for (let v = 0; v < b[i]!.length; v++) {
      const x = a[i]![v];
      if (typeof x !== 'number' || !Number.isFinite(x)) return Infinity;
      worst = Math.max(worst, Math.abs(x - b[i]![v]!));
    }
  }
  return worst;
}

const CASES = [
  { arch: 'llama', gguf: 'llama' },
  { arch: 'mistral', gguf: 'llama' },
  { arch: 'qwen2', gguf: 'qwen2' },
] as const;

describe.skipIf(!prefix)('HF model directory → GGUF → llama.cpp: same logits, same tokens', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tensorport-llama-cpp-'));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  for (const { arch, gguf } of CASES) {
    describe(arch, () => {
      let expected: Expected;
      let config: { vocab_size: number };
      beforeAll(async () => {
        expected = JSON.parse(await readFile(join(MODELS, `${arch}.expected.json`), 'utf8')) as Expected;
        config = JSON.parse(await readFile(join(MODELS, arch, 'config.json'), 'utf8')) as { vocab_size: number };
      });

      async function run(type: string) {
        const output = join(dir, `${arch}-${type}.gguf`);
        const r = await convertPath({ input: join(MODELS, arch), output, gguf: { type }, fsync: false });
        expect(r.files).toEqual([output]);
        return runLlamaCpp(prefix!, output, expected.prompt, expected.strings.map((s) => s.text));
      }

      it('F32: loads as its architecture, logits within 1e-3 of transformers, tokens as the HF tokenizer', { timeout: 180_000 }, async () => {
        const got = await run('F32');
        expect(got.architecture).toBe(gguf);
        expect(got.vocabulary).toBe(config.vocab_size);
        expect(maxAbsDiff(got.logits, expected.logits)).toBeLessThan(1e-3);
        expect(got.tokens).toEqual(expected.strings.map((s) => s.ids));
      });

      it('F16: logits within 1e-3', { timeout: 180_000 }, async () => {
        const got = await run('F16');
        expect(maxAbsDiff(got.logits, expected.logits)).toBeLessThan(1e-3);
      });

      for (const type of ['Q8_0', 'Q4_0'] as const) {
        it(`${type}: logits as gguf-py's ${type} weights give them`, { timeout: 180_000 }, async () => {
          const got = await run(type);
          const quantized = expected[`logits_${type}`];
          const ownError = maxAbsDiff(quantized, expected.logits);
          expect(maxAbsDiff(got.logits, quantized)).toBeLessThan(1e-2);
          expect(maxAbsDiff(got.logits, expected.logits)).toBeLessThanOrEqual(2 * ownError + 1e-3);
        });
      }
    });
  }

  it('a GGUF without a tokenizer is refused by llama.cpp (what a weights-only directory gives), so the loads above are real', { timeout: 180_000 }, async () => {
    const output = join(dir, 'no-tokenizer.gguf');
    await convertPath({ input: join(REPO, 'fixtures/gguf/tiny-llama'), output, fsync: false });
    await expect(runLlamaCpp(prefix!, output, [1, 2], [])).rejects.toThrow(/tokenizer\.ggml\.model/);
  });
});
