import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { inspectPath, validatePath } from '../src/node/index.ts';

/**
 * Issue 11 item 13: diffusers (`diffusion_pytorch_model*.safetensors` / `.bin`, sharded with their
 * index) and PEFT (`adapter_model.safetensors` / `.bin`) directories open as the model they hold.
 * Written by huggingface_hub's save_torch_state_dict with those libraries' filename patterns.
 */
const REPO = join(import.meta.dirname, '../../..');
const LAYOUTS = join(REPO, 'fixtures/transformers/layouts');
const expected = (JSON.parse(readFileSync(join(REPO, 'fixtures/transformers/expected.json'), 'utf8')) as { layouts: Record<string, { files: string[]; tensors: string[] }> }).layouts;

describe('diffusers and PEFT directory names', () => {
  for (const [name, want] of Object.entries(expected)) {
    it(`${name} (${want.files.join(', ')}): inspect lists every tensor, validate passes`, async () => {
      const dir = join(LAYOUTS, name);
      const r = await inspectPath(dir);
      const sharded = want.files.length > 1;
      expect(r.format).toBe(name.endsWith('-bin') ? (sharded ? 'torch-sharded' : 'torch-zip') : sharded ? 'safetensors-sharded' : 'safetensors');
      expect(r.tensors.map((t) => t.name).sort()).toEqual(want.tensors);
      if (!name.endsWith('-bin')) expect(new Set(r.tensors.map((t) => t.file?.split('/').pop()))).toEqual(new Set(want.files.filter((f) => !f.endsWith('.json'))));
      expect((await validatePath(dir)).valid).toBe(true);
    });
  }
});
