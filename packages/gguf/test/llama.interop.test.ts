import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BytesSource, MemorySink, openSafetensors, writeSafetensors } from '@tensorport/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { llamaFromGguf, llamaToGguf, openGguf, writeGguf, type LlamaConfig } from '../src/index.ts';
import { FIX } from './helpers.ts';

const py = await requirePython(['gguf', 'numpy', 'torch', 'transformers']);

const MODEL = new URL('tiny-llama/', FIX);
const OUTTYPES = ['F32', 'F16', 'Q8_0'] as const;

// Loads the original and every round-tripped model with transformers and compares logits with
// (a) the original for F32, (b) the original with its matrices rounded to f16 for F16 (norms stay
// F32 in GGUF), (c) the original with its matrices through gguf.quants Q8_0 for Q8_0; then checks
// the F32 GGUF with GGUFReader: the converter's q/k permutation and llama.cpp's metadata types.
const SCRIPT = `
import sys, json
class _NoVision:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('torchvision', 'PIL'): raise ImportError(name)
sys.meta_path.insert(0, _NoVision())
import copy, numpy as np, torch
from transformers import LlamaForCausalLM
from gguf import GGUFReader, quants, GGMLQuantizationType as T
src, out = sys.argv[1], sys.argv[2]
ids = torch.tensor([[1, 5, 9, 33, 2, 70, 95, 0, 12, 44, 3, 17]])
def logits(m):
    with torch.no_grad(): return m(ids).logits.float().numpy()
orig = LlamaForCausalLM.from_pretrained(src, dtype=torch.float32)
ref = logits(orig)
res = {}
def is_matrix(n, p): return p.dim() >= 2
for outtype, through in [('F32', None), ('F16', 'f16'), ('Q8_0', 'q8')]:
    m = LlamaForCausalLM.from_pretrained(out + '/' + outtype, dtype=torch.float32)
    got = logits(m)
    expect = copy.deepcopy(orig)
    with torch.no_grad():
        for n, p in expect.named_parameters():
            if not is_matrix(n, p) or through is None: continue
            a = p.numpy()
            if through == 'f16': b = a.astype(np.float16).astype(np.float32)
            else: b = quants.dequantize(quants.quantize(a, T.Q8_0), T.Q8_0).reshape(a.shape)
            p.copy_(torch.from_numpy(np.ascontiguousarray(b)))
    want = logits(expect)
    sd_got = {k: v for k, v in m.state_dict().items()}
    sd_want = expect.state_dict()
    res[outtype] = {
        'weightsEqual': all(torch.equal(sd_got[k], sd_want[k]) for k in sd_want),
        'logitsEqual': bool(np.array_equal(got, want)),
        'maxAbsVsExpected': float(np.abs(got - want).max()),
        'maxAbsVsOriginal': float(np.abs(got - ref).max()),
        'maxAbsLogit': float(np.abs(ref).max()),
    }
r = GGUFReader(out + '/F32.gguf')
t = {x.name: x for x in r.tensors}
def permute(w, n_head, n_head_kv):
    if n_head_kv is not None and n_head != n_head_kv: n_head = n_head_kv
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)
sd = orig.state_dict()
res['permutation'] = all(
    np.array_equal(np.asarray(t[f'blk.{i}.attn_q.weight'].data), permute(sd[f'model.layers.{i}.self_attn.q_proj.weight'].numpy(), 4, 4)) and
    np.array_equal(np.asarray(t[f'blk.{i}.attn_k.weight'].data), permute(sd[f'model.layers.{i}.self_attn.k_proj.weight'].numpy(), 4, 2))
    for i in range(2))
res['types'] = {f.name: f.types[0].name for f in r.fields.values() if f.name.startswith('llama.') or f.name.startswith('general.')}
print(json.dumps(res))
`;

describe.skipIf(!py)('tiny llama: safetensors → GGUF → safetensors, checked with transformers', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gguf-llama-'));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('gives the same logits (F32 and F16 exactly, Q8_0 exactly as gguf-py Q8_0 weights)', async () => {
    const config = JSON.parse(await readFile(new URL('config.json', MODEL), 'utf8')) as LlamaConfig;
    const st = await openSafetensors(new BytesSource(new Uint8Array(await readFile(new URL('model.safetensors', MODEL)))));
    for (const outtype of OUTTYPES) {
      const conv = llamaToGguf(st.tensors, config, { outtype, name: 'tiny-llama' });
      expect(conv.fallbacks).toEqual([]);
      const sink = new MemorySink();
      await writeGguf(conv.tensors, conv.metadata, sink);
      const ggufBytes = sink.bytes();
      await writeFile(join(dir, `${outtype}.gguf`), ggufBytes);
      const g = await openGguf(new BytesSource(ggufBytes));
      expect(g.warnings).toEqual([]);
      const back = llamaFromGguf(g, { dtype: 'F32' });
      expect(back.skipped).toEqual([]);
      expect(back.tensors.map((t) => t.name).sort()).toEqual(st.tensors.map((t) => t.name).sort());
      const out = join(dir, outtype);
      await mkdir(out);
      const stSink = new MemorySink();
      await writeSafetensors(back.tensors, back.metadata, stSink);
      await writeFile(join(out, 'model.safetensors'), stSink.bytes());
      await writeFile(join(out, 'config.json'), JSON.stringify(back.config, null, 2));
      expect(back.config).toMatchObject({ hidden_size: 64, num_key_value_heads: 2, rms_norm_eps: 1e-5, rope_theta: 10000, vocab_size: 96, tie_word_embeddings: false });
    }
    const res = JSON.parse(await runPython(py!.exe, SCRIPT, { args: [new URL('.', MODEL).pathname, dir], timeout: 280_000 })) as Record<string, any>;
    for (const outtype of OUTTYPES) {
      expect(res[outtype].weightsEqual, outtype).toBe(true);
      expect(res[outtype].logitsEqual, outtype).toBe(true);
    }
    expect(res.F32.maxAbsVsOriginal).toBe(0);
    // Measured quantization error, for the docs: max |logit| difference against the F32 original.
    console.log('Q8_0 max |Δlogit| vs original', res.Q8_0.maxAbsVsOriginal, 'of max |logit|', res.Q8_0.maxAbsLogit, '; F16', res.F16.maxAbsVsOriginal);
    expect(res.Q8_0.maxAbsVsOriginal).toBeGreaterThan(0);
    expect(res.Q8_0.maxAbsVsOriginal).toBeLessThan(0.05 * res.Q8_0.maxAbsLogit);
    expect(res.permutation).toBe(true);
    expect(res.types).toMatchObject({
      'general.architecture': 'STRING', 'llama.block_count': 'UINT32', 'llama.context_length': 'UINT32', 'llama.embedding_length': 'UINT32',
      'llama.feed_forward_length': 'UINT32', 'llama.attention.head_count': 'UINT32', 'llama.attention.head_count_kv': 'UINT32',
      'llama.rope.freq_base': 'FLOAT32', 'llama.attention.layer_norm_rms_epsilon': 'FLOAT32', 'general.file_type': 'UINT32',
    });
  }, 300_000); // importing torch + transformers took 100 s here while other suites ran
});
