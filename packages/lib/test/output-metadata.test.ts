import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { convertPath } from '../src/node/index.ts';

/**
 * Issue 11 item 13: a safetensors output whose input had no `format` metadata gets `{"format":
 * "pt"}` (transformers refuses or fails on files without it); `write.safetensors.metadata` adds
 * entries; every index carries total_parameters next to total_size, as transformers writes.
 */
const REPO = join(import.meta.dirname, '../../..');
const dirs: string[] = [];
const tempDir = async () => {
  const d = await mkdtemp(join(tmpdir(), 'tp-meta-'));
  dirs.push(d);
  return d;
};
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

function header(bytes: Buffer): Record<string, unknown> {
  const n = Number(bytes.readBigUInt64LE(0));
  return JSON.parse(bytes.subarray(8, 8 + n).toString('utf8')) as Record<string, unknown>;
}

describe('safetensors output metadata and index', () => {
  it('an npz input (no metadata) gets format pt; extra entries added; an input format is kept', async () => {
    const dir = await tempDir();
    await convertPath({ input: join(REPO, 'fixtures/identify/arrays.npz'), output: join(dir, 'a.safetensors'), fsync: false });
    expect(header(await readFile(join(dir, 'a.safetensors'))).__metadata__).toEqual({ format: 'pt' });
    await convertPath({ input: join(REPO, 'fixtures/identify/arrays.npz'), output: join(dir, 'b.safetensors'), fsync: false, write: { safetensors: { metadata: { source: 'x' } } } });
    expect(header(await readFile(join(dir, 'b.safetensors'))).__metadata__).toEqual({ format: 'pt', source: 'x' });
    // model.safetensors there has {"format": "np"}: kept as it was
    await convertPath({ input: join(REPO, 'fixtures/identify/model.safetensors'), output: join(dir, 'c.safetensors'), fsync: false });
    expect(header(await readFile(join(dir, 'c.safetensors'))).__metadata__).toEqual({ format: 'np' });
  });

  it('a sharded output index has total_parameters (element count of what was written) and total_size', async () => {
    const dir = await tempDir();
    const out = join(dir, 'sharded/');
    await convertPath({ input: join(REPO, 'fixtures/transformers/tied-sharded'), output: out, maxShardSize: 6000, fsync: false });
    const index = JSON.parse(await readFile(join(out, 'model.safetensors.index.json'), 'utf8')) as { metadata: Record<string, number>; weight_map: Record<string, string> };
    expect(Object.keys(index.metadata)).toEqual(['total_parameters', 'total_size']);
    // 5,712 parameters in 20 stored F32 tensors (the tied head is an alias)
    expect(index.metadata).toEqual({ total_parameters: 5712, total_size: 5712 * 4 });
  });
});

const py = await requirePython(['torch', 'transformers', 'safetensors']);
describe.skipIf(!py)('transformers reads what we write', () => {
  it('from_pretrained on a sharded safetensors output of the tied Llama (index with total_parameters, format pt)', { timeout: 300_000 }, async () => {
    const dir = await tempDir();
    const out = join(dir, 'model/');
    await convertPath({ input: join(REPO, 'fixtures/transformers/tied-sharded'), output: out, maxShardSize: 6000, fsync: false });
    const { copyFile } = await import('node:fs/promises');
    await copyFile(join(REPO, 'fixtures/transformers/tied-sharded/config.json'), join(out, 'config.json'));
    const got = await runPython(py!.exe, `
import sys
try:
    import torchvision  # noqa: F401  (a torchvision built for another torch breaks transformers' import)
except Exception:
    sys.modules["torchvision"] = None
from transformers import LlamaForCausalLM
m = LlamaForCausalLM.from_pretrained(sys.argv[1])
print(m.num_parameters(), m.lm_head.weight.data_ptr() == m.model.embed_tokens.weight.data_ptr())
`, { args: [out], timeout: 290_000 });
    expect(got.trim().split('\n').pop()).toBe('5712 True');
  });
});
