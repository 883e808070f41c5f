/** GGUF → safetensors of a Llama 3.1-style model: the scaling in rope_freqs.weight cannot go back into config.json, and says so. */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { convertPath } from '../src/node/index.ts';

const MODELS = join(import.meta.dirname, '../../../fixtures/gguf/hf-models');

describe('GGUF with rope_freqs.weight back to safetensors', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tensorport-rope-back-'));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('warns GgufRopeFreqsDropped naming the tensor; a model without the scaling gets no such warning', async () => {
    for (const [arch, warned] of [['llama31', true], ['llama', false]] as const) {
      const gguf = join(dir, `${arch}.gguf`);
      await convertPath({ input: join(MODELS, arch), output: gguf, gguf: { type: 'F32' }, fsync: false });
      const back = await convertPath({ input: gguf, output: join(dir, `${arch}-back/`), fsync: false });
      const found = back.warnings.filter((w) => w.code === 'GgufRopeFreqsDropped');
      expect(found.map((w) => w.tensor), arch).toEqual(warned ? ['rope_freqs.weight'] : []);
      expect((await readdir(join(dir, `${arch}-back`))).sort()).toEqual(['config.json', 'model.safetensors']);
    }
  });
});
