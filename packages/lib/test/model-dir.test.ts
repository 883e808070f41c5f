/**
 * `convert DIR out/` carries the model directory over (issue 11 item 12): config.json,
 * generation_config.json and the tokenizer files go with the weights, so transformers loads the
 * output; stale safetensors shards and a stale index in the output directory are refused without
 * force and removed with it, in the same all-or-nothing commit (a failed check puts everything back).
 */
import { createHash } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createRegistry, FORMATS, safetensorsFormat, type AnyFormat } from '../src/index.ts';
import { convertPath, inspectPath } from '../src/node/index.ts';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';

const REPO = join(import.meta.dirname, '../../..');
const INPUT = join(REPO, 'fixtures/safetensors/transformer_shard.safetensors');
const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));
async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'tensorport-modeldir-'));
  dirs.push(d);
  return d;
}
/** Resolves once `path` exists; rejects with the process's failure if it ends first. */
async function untilExists(path: string, process: Promise<string>): Promise<void> {
  let ended = false;
  void process.then(
    () => (ended = true),
    () => (ended = true),
  );
  for (;;) {
    if (await stat(path).then(() => true, () => false)) return;
    if (ended) {
      await process;
      throw new Error(`the Python process ended without writing ${path}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
const sha = async (p: string) => createHash('sha256').update(await readFile(p)).digest('hex');

describe('stale weight files in the output directory', () => {
  it('a sharded model left in out/ is refused (OutputExists naming the shards and index) and removed with force', async () => {
    const root = await tempDir();
    const out = join(root, 'out/');
    const first = await convertPath({ input: INPUT, output: out, maxShardSize: 4_000, fsync: false });
    const shards = first.files.map((f) => f.split('/').pop()!);
    expect(shards.length).toBeGreaterThan(2);
    expect(shards).toContain('model.safetensors.index.json');

    // Someone's other file: not a name a loader reads with ours, never refused or removed.
    await writeFile(join(out, 'model_ema.safetensors'), 'kept');
    const refused = convertPath({ input: INPUT, output: out, fsync: false });
    await expect(refused).rejects.toMatchObject({ code: 'OutputExists' });
    await expect(refused).rejects.toThrow(/model-00001-of-\d+\.safetensors already exists and would be loaded with the new weights \(so do .*model\.safetensors\.index\.json/);
    await expect(refused).rejects.not.toThrow(/model_ema/);
    expect((await readdir(out)).sort()).toEqual([...shards, 'model_ema.safetensors'].sort());

    const r = await convertPath({ input: INPUT, output: out, force: true, fsync: false });
    expect(r.files.map((f) => f.split('/').pop())).toEqual(['model.safetensors']);
    expect((await readdir(out)).sort()).toEqual(['model.safetensors', 'model_ema.safetensors']);
    const back = await inspectPath(out);
    expect(back.format).toBe('safetensors');
  });

  it('with force, a check that fails after the commit puts back the replaced file and the stale ones', async () => {
    const root = await tempDir();
    const out = join(root, 'out/');
    await convertPath({ input: INPUT, output: out, dtype: 'bf16', fsync: false });
    await writeFile(join(out, 'model-00001-of-00002.safetensors'), 'an old shard');
    const before = await sha(join(out, 'model.safetensors'));
    // The same formats, except that safetensors' validator refuses whatever it reads back.
    const refusing: AnyFormat = { ...safetensorsFormat, validate: async () => ({ valid: false, errors: [{ code: 'InvalidHeader', message: 'refused by the test' }], warnings: [], files: [] }) };
    const registry = createRegistry(FORMATS.map((f) => (f.name === 'safetensors' ? refusing : f)));
    await expect(convertPath({ input: INPUT, output: out, force: true, fsync: false, registry })).rejects.toThrow(/refused by the test/);
    // Every entry as before: the replaced file is the old one again, the stale shard is still there, no temp/journal/backup left.
    expect((await readdir(out)).sort()).toEqual(['model-00001-of-00002.safetensors', 'model.safetensors']);
    expect(await sha(join(out, 'model.safetensors'))).toBe(before);
    expect(await readFile(join(out, 'model-00001-of-00002.safetensors'), 'utf8')).toBe('an old shard');
  });
});

describe('side files of a model directory', () => {
  it('a directory input carries them, a file input does not, the input directory as output keeps its own', async () => {
    const root = await tempDir();
    const src = join(root, 'src');
    await mkdir(src);
    await copyFile(join(REPO, 'fixtures/torch/checkpoints/transformers.pt'), join(src, 'pytorch_model.bin'));
    await writeFile(join(src, 'config.json'), '{"model_type": "llama", "rms_norm_eps": 1e-05}');
    await writeFile(join(src, 'tokenizer.json'), '{"version": "1.0"}');
    await writeFile(join(src, '.hidden.json'), '{}');
    await writeFile(join(src, 'README.md'), '---\nlicense: mit\n---\n# the model card\n');
    await writeFile(join(src, 'NOTES.md'), 'not carried: only the model card is');

    const dir = await convertPath({ input: src, output: join(root, 'a/'), fsync: false });
    expect(dir.copied.sort()).toEqual(['README.md', 'config.json', 'tokenizer.json']);
    expect((await readdir(join(root, 'a'))).sort()).toEqual(['README.md', 'config.json', 'model.safetensors', 'tokenizer.json']);
    expect(await readFile(join(root, 'a', 'README.md'), 'utf8')).toBe('---\nlicense: mit\n---\n# the model card\n');
    expect(await readFile(join(root, 'a', 'config.json'), 'utf8')).toBe('{"model_type": "llama", "rms_norm_eps": 1e-05}');

    const file = await convertPath({ input: join(src, 'pytorch_model.bin'), output: join(root, 'b/'), fsync: false });
    expect(file.copied).toEqual([]);
    expect(await readdir(join(root, 'b'))).toEqual(['model.safetensors']);

    // In place (.bin beside, safetensors added): the side files are already there.
    const inPlace = await convertPath({ input: src, output: src, fsync: false });
    expect(inPlace.copied).toEqual([]);
    expect((await readdir(src)).sort()).toEqual(['.hidden.json', 'NOTES.md', 'README.md', 'config.json', 'model.safetensors', 'pytorch_model.bin', 'tokenizer.json']);
  });
});

const py = await requirePython(['torch', 'transformers', 'tokenizers']);
const PRELUDE = `
import json, sys
try:
    import torchvision  # noqa: F401  (a torchvision built for another torch breaks transformers' import)
except Exception:
    sys.modules["torchvision"] = None
import torch
`;

describe.skipIf(!py)('a transformers model directory converted .bin → safetensors', () => {
  it('copies config, generation config and tokenizer; from_pretrained and the tokenizer load the output', { timeout: 180_000 }, async () => {
    const root = await tempDir();
    const src = join(root, 'tiny');
    // One Python process (torch + transformers import once): it saves a tiny Llama by save_pretrained,
    // with a generation config and a fast tokenizer, its weights as pytorch_model.bin (torch.save of
    // the state dict, as transformers 4 wrote it; 5 writes safetensors only), says "ready", waits
    // for "go" while we convert, then loads the output.
    const python = runPython(
      py!.exe,
      `${PRELUDE}
import os, time
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
src, out, root = sys.argv[1:4]
torch.manual_seed(0)
cfg = LlamaConfig(vocab_size=40, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                  num_key_value_heads=1, max_position_embeddings=64, tie_word_embeddings=False, rms_norm_eps=1e-05)
m = LlamaForCausalLM(cfg).eval()
m.generation_config = GenerationConfig(max_new_tokens=7, do_sample=False, bos_token_id=1, eos_token_id=2)
m.save_pretrained(src)
os.remove(os.path.join(src, "model.safetensors"))
torch.save(m.state_dict(), os.path.join(src, "pytorch_model.bin"))
vocab = {w: i for i, w in enumerate(["<unk>", "<s>", "</s>", "hello", "world"] + [f"w{i}" for i in range(35)])}
tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>").save_pretrained(src)
with torch.no_grad():
    made = m(torch.tensor([[3, 4, 7, 9]])).logits.flatten().tolist()
open(os.path.join(root, "ready"), "w").close()
deadline = time.time() + 150
while not os.path.exists(os.path.join(root, "go")):
    if time.time() > deadline:
        sys.exit("no go")
    time.sleep(0.05)
m2 = AutoModelForCausalLM.from_pretrained(out).eval()
t = AutoTokenizer.from_pretrained(out)
ids = t("hello world w2 w4")["input_ids"]
with torch.no_grad():
    logits = m2(torch.tensor([ids])).logits.flatten().tolist()
print(json.dumps({"made": made, "ids": ids, "logits": logits, "max_new_tokens": m2.generation_config.max_new_tokens}))
`,
      { args: [src, join(root, 'out'), root], timeout: 175_000 },
    );
    const out = join(root, 'out/');
    try {
      await untilExists(join(root, 'ready'), python);
      const inputFiles = (await readdir(src)).sort();
      expect(inputFiles).toContain('pytorch_model.bin');
      expect(inputFiles).toEqual(expect.arrayContaining(['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json']));

      const r = await convertPath({ input: src, output: out, fsync: false, verify: true });
      expect(r.verified).toBe(true);
      const carried = inputFiles.filter((f) => f !== 'pytorch_model.bin');
      expect(r.copied.sort()).toEqual(carried);
      expect((await readdir(out)).sort()).toEqual(['model.safetensors', ...carried].sort());
      // Copied byte for byte: config.json keeps Python's 1e-05 and every other spelling.
      for (const f of carried) expect(await sha(join(out, f)), f).toBe(await sha(join(src, f)));
    } finally {
      // Python loads whatever is there (and fails the test below if the convert did not happen).
      await writeFile(join(root, 'go'), '');
    }
    const got = JSON.parse((await python).trim().split('\n').pop()!) as { made: number[]; ids: number[]; logits: number[]; max_new_tokens: number };
    expect(got.ids).toEqual([3, 4, 7, 9]);
    expect(got.max_new_tokens).toBe(7);
    // Same weights bit for bit, same computation: identical logits.
    expect(got.logits).toEqual(got.made);
  });
});
