import { copyFileSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkShardAgreement, FolderContext, MemoryFolder, parseShardIndex, writeSafetensors, type Finding } from '@tensorport/core';
import { FileSink } from '@tensorport/core/node';
import { describe, expect, it } from 'vitest';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { joinTorchShards, keptTiedName, torchFormat, type TorchCheckpoint } from '../src/index.ts';
import { openTorchCheckpointFile } from '../src/node/index.ts';
import { digest } from './helpers/digest.ts';

/**
 * Issue 11 items 1 and 4: a tiny Llama with tie_word_embeddings=True saved by huggingface_hub
 * (fixtures/transformers/generate.py). Sharded, the tied names sit in one shard on one storage;
 * no name may vanish, and the name kept is the one transformers keeps (the input embedding).
 */
const FIXTURES = fileURLToPath(new URL('../../../fixtures/transformers/', import.meta.url));
const expected = JSON.parse(readFileSync(join(FIXTURES, 'expected.json'), 'utf8')) as Record<string, { files: string[]; count: number; tensors: Record<string, { shape: number[]; file: string }>; shared: string[][] }>;

async function openShards(dir: string): Promise<Array<{ path: string; file: string; checkpoint: TorchCheckpoint }>> {
  const files = readdirSync(dir).filter((f) => f.endsWith('.bin')).sort();
  return Promise.all(files.map(async (file) => ({ path: join(dir, file), file, checkpoint: await openTorchCheckpointFile(join(dir, file)) })));
}

describe('tied weights in huggingface_hub checkpoints', () => {
  it('sharded pytorch_model-*.bin: every name torch sees is a tensor or a recorded alias; index and shards agree', async () => {
    const dir = join(FIXTURES, 'tied-sharded');
    const want = expected['tied-sharded']!;
    const shards = await openShards(dir);
    try {
      const joined = joinTorchShards(shards);
      const names = [...joined.tensors.map((t) => t.name), ...Object.keys(joined.aliases)].sort();
      expect(names).toEqual(Object.keys(want.tensors).sort());
      expect(names.length).toBe(want.count);
      expect(joined.aliases).toEqual({ 'lm_head.weight': 'model.embed_tokens.weight' });
      expect(joined.metadata.get('lm_head.weight')).toBe('model.embed_tokens.weight');
      expect(joined.metadata.get('format')).toBe('pt');
      const index = parseShardIndex(readFileSync(join(dir, 'pytorch_model.bin.index.json')));
      const warnings: Finding[] = [];
      checkShardAgreement(index, shards.map((s) => ({ file: s.file, tensors: s.checkpoint.tensors, aliases: Object.keys(s.checkpoint.aliases) })), warnings, 'pytorch_model.bin.index.json');
      expect(warnings).toEqual([]);
    } finally {
      await Promise.all(shards.map((s) => s.checkpoint.close()));
    }
  });

  it('torchFormat over a folder (library and web path): 21 names, the alias in metadata; config.json read through the Context', async () => {
    for (const src of ['tied-sharded', 'tied-single']) {
      const dir = join(FIXTURES, src);
      const folder = new MemoryFolder(readdirSync(dir).map((f) => [f, new Uint8Array(readFileSync(join(dir, f)))] as const), src);
      const ctx = new FolderContext(folder, null);
      const c = await torchFormat.open(ctx);
      try {
        expect(c.tensors.length + 1).toBe(expected[src]!.count);
        expect(c.tensors.map((t) => t.name)).toContain('model.embed_tokens.weight');
        expect(c.metadata?.get('lm_head.weight')).toBe('model.embed_tokens.weight');
      } finally {
        await c.close();
        await ctx.close();
      }
    }
  });

  it('config.json with tie_word_embeddings=true: the input embedding is kept, the head recorded as its alias', async () => {
    const c = await openTorchCheckpointFile(join(FIXTURES, 'tied-single/pytorch_model.bin'));
    try {
      expect(c.tensors.map((t) => t.name)).toContain('model.embed_tokens.weight');
      expect(c.tensors.map((t) => t.name)).not.toContain('lm_head.weight');
      expect(c.aliases).toEqual({ 'lm_head.weight': 'model.embed_tokens.weight' });
    } finally {
      await c.close();
    }
  });

  it('tie_word_embeddings=false (transformers would not re-tie): both names written, with a warning', async () => {
    const c = await openTorchCheckpointFile(join(FIXTURES, 'tied-single/pytorch_model.bin'), { tiedWeights: { tieWordEmbeddings: false, path: 'config.json' } });
    try {
      const byName = new Map(c.tensors.map((t) => [t.name, t]));
      expect(c.aliases).toEqual({});
      expect(await digest(byName.get('lm_head.weight')!)).toBe(await digest(byName.get('model.embed_tokens.weight')!));
      expect(c.warnings.map((w) => w.code)).toContain('TorchTiedCopied');
    } finally {
      await c.close();
    }
  });

  it('keptTiedName follows transformers\' sources across model families', () => {
    expect(keptTiedName(['lm_head.weight', 'model.embed_tokens.weight'])).toBe('model.embed_tokens.weight');
    expect(keptTiedName(['transformer.wte.weight', 'lm_head.weight'])).toBe('transformer.wte.weight');
    expect(keptTiedName(['embed_out.weight', 'gpt_neox.embed_in.weight'])).toBe('gpt_neox.embed_in.weight');
    expect(keptTiedName(['proj_out.weight', 'model.decoder.embed_tokens.weight'])).toBe('model.decoder.embed_tokens.weight');
    expect(keptTiedName(['lm_head.weight', 'model.shared.weight'])).toBe('model.shared.weight');
    expect(keptTiedName(['head.weight', 'embed.weight'])).toBe('embed.weight');
  });
});

// One Python run loads both models: importing transformers dominates the time.
const py = await requirePython(['torch', 'transformers', 'safetensors']);
describe.skipIf(!py)('transformers reloads our safetensors output', () => {
  it('from_pretrained on the converted tied Llama (single and sharded input): the same logits, the head tied again', { timeout: 180_000 }, async () => {
    const outs: string[] = [];
    for (const src of ['tied-single', 'tied-sharded']) {
      const out = mkdtempSync(join(tmpdir(), `tp-tied-${src}-`));
      copyFileSync(join(FIXTURES, src, 'config.json'), join(out, 'config.json'));
      const shards = await openShards(join(FIXTURES, src));
      try {
        const joined = joinTorchShards(shards);
        await writeSafetensors(joined.tensors, joined.metadata, await FileSink.create(join(out, 'model.safetensors')));
      } finally {
        await Promise.all(shards.map((s) => s.checkpoint.close()));
      }
      outs.push(out);
    }
    const script = `
import json, sys
try:
    import torchvision  # noqa: F401  (a torchvision built for another torch breaks transformers' import)
except Exception:
    sys.modules["torchvision"] = None
import torch
from safetensors import safe_open
from transformers import LlamaConfig, LlamaForCausalLM
src = sys.argv[1]
ref = LlamaForCausalLM(LlamaConfig.from_pretrained(src + "/tied-single")).eval()
ref.load_state_dict(torch.load(src + "/tied-single/pytorch_model.bin", weights_only=True))
ids = torch.arange(12).reshape(1, 12) % 64
with torch.no_grad():
    want = ref(ids).logits
res = []
for out in sys.argv[2:]:
    with safe_open(out + "/model.safetensors", "pt") as f:
        keys, meta = sorted(f.keys()), f.metadata()
    m = LlamaForCausalLM.from_pretrained(out).eval()
    with torch.no_grad():
        got = m(ids).logits
    res.append({"keys": keys, "meta": meta, "equal": bool(torch.equal(got, want)),
                "tied": m.lm_head.weight.data_ptr() == m.model.embed_tokens.weight.data_ptr()})
print(json.dumps(res))
`;
    const res = JSON.parse((await runPython(py!.exe, script, { args: [FIXTURES, ...outs], timeout: 170_000 })).trim().split('\n').pop()!) as Array<{ keys: string[]; meta: Record<string, string>; equal: boolean; tied: boolean }>;
    for (const r of res) {
      expect(r.keys).toContain('model.embed_tokens.weight');
      expect(r.keys).not.toContain('lm_head.weight');
      expect(r.meta).toEqual({ format: 'pt', 'lm_head.weight': 'model.embed_tokens.weight' });
      expect(r.equal).toBe(true);
      expect(r.tied).toBe(true);
    }
  });
});
