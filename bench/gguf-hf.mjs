// HF model directory → GGUF: tensorport against llama.cpp's own convert_hf_to_gguf.py, in one run.
// A random Mistral-shaped model of about --gib GiB of F32 weights (numpy + safetensors' save_file,
// the committed tiny Mistral's SentencePiece-style tokenizer beside it) is converted to F16 and
// Q8_0 by both, wall time and peak RSS under GNU time, page cache warm, median of --runs. Our
// --no-fsync is the like-for-like row (the Python converter does not fsync); the default adds it.
//   node bench/gguf-hf.mjs [--gib 1] [--runs 1] [--llama-cpp-src DIR]
// The converter comes from llama.cpp's source: --llama-cpp-src, else the source bundle inside the
// node-llama-cpp oracle (tmp/oracles/llama-cpp, README), cloned to tmp/oracles/llama-cpp-src; it
// runs with that source's gguf-py and needs python3 with numpy, torch, safetensors, transformers,
// sentencepiece and protobuf. Figures in docs/benchmarks.md ("HF model directory → GGUF").
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CLI, ROOT, findPython, measure, median, requireBuild } from './lib.mjs';

requireBuild();
const { values } = parseArgs({ options: { gib: { type: 'string', default: '1' }, runs: { type: 'string', default: '1' }, 'llama-cpp-src': { type: 'string' } } });
const gib = Number(values.gib);
const runs = Number(values.runs);

function llamaCppSource() {
  if (values['llama-cpp-src']) return values['llama-cpp-src'];
  const dir = join(ROOT, 'tmp/oracles/llama-cpp-src');
  if (existsSync(join(dir, 'convert_hf_to_gguf.py'))) return dir;
  const bundle = join(ROOT, 'tmp/oracles/llama-cpp/node_modules/node-llama-cpp/llama/gitRelease.bundle');
  if (!existsSync(bundle)) {
    console.error(`bench: no llama.cpp source: give --llama-cpp-src, or install the oracle (README) so that ${bundle} exists`);
    process.exit(2);
  }
  const r = spawnSync('git', ['clone', '--quiet', bundle, dir], { stdio: 'inherit' });
  if (r.status !== 0) process.exit(2);
  return dir;
}

const py = findPython(['numpy', 'safetensors', 'torch', 'transformers', 'sentencepiece']);
if (!py) {
  console.error('bench: needs python3 with numpy, safetensors, torch, transformers, sentencepiece (pip install sentencepiece protobuf)');
  process.exit(2);
}
const src = llamaCppSource();

// hidden 2048, 16 heads, 8 KV heads, intermediate 5632: 46.1 M weights per layer (184 MiB of F32).
const GEN = `
import json, sys, numpy as np
from safetensors.numpy import save_file
out, layers = sys.argv[1], int(sys.argv[2])
h, ff, heads, kv, vocab = 2048, 5632, 16, 8, 420
hd = h // heads
rng = np.random.default_rng(0)
w = lambda *s: (rng.standard_normal(s, dtype=np.float32) * 0.02)
t = {'model.embed_tokens.weight': w(vocab, h), 'model.norm.weight': np.ones(h, np.float32), 'lm_head.weight': w(vocab, h)}
for i in range(layers):
    p = f'model.layers.{i}.'
    t[p + 'input_layernorm.weight'] = np.ones(h, np.float32)
    t[p + 'post_attention_layernorm.weight'] = np.ones(h, np.float32)
    t[p + 'self_attn.q_proj.weight'] = w(heads * hd, h)
    t[p + 'self_attn.k_proj.weight'] = w(kv * hd, h)
    t[p + 'self_attn.v_proj.weight'] = w(kv * hd, h)
    t[p + 'self_attn.o_proj.weight'] = w(h, heads * hd)
    t[p + 'mlp.gate_proj.weight'] = w(ff, h)
    t[p + 'mlp.up_proj.weight'] = w(ff, h)
    t[p + 'mlp.down_proj.weight'] = w(h, ff)
save_file(t, out + '/model.safetensors', metadata={'format': 'pt'})
json.dump({'architectures': ['MistralForCausalLM'], 'model_type': 'mistral', 'hidden_size': h, 'intermediate_size': ff,
    'num_hidden_layers': layers, 'num_attention_heads': heads, 'num_key_value_heads': kv, 'max_position_embeddings': 4096,
    'rms_norm_eps': 1e-5, 'rope_theta': 10000.0, 'vocab_size': vocab, 'tie_word_embeddings': False, 'sliding_window': None,
    'bos_token_id': 1, 'eos_token_id': 2, 'torch_dtype': 'float32'}, open(out + '/config.json', 'w'))
`;

const dir = mkdtempSync(join(tmpdir(), 'tensorport-gguf-hf-'));
try {
  const model = join(dir, 'model');
  spawnSync('mkdir', ['-p', model]);
  const layers = Math.max(1, Math.round((gib * 2 ** 30) / (46.1e6 * 4)));
  const g = spawnSync(py, ['-c', GEN, model, String(layers)], { stdio: 'inherit' });
  if (g.status !== 0) process.exit(1);
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(ROOT, 'fixtures/gguf/hf-models/mistral', f), join(model, f));
  const inBytes = statSync(join(model, 'model.safetensors')).size;
  const env = { ...process.env, PYTHONPATH: join(src, 'gguf-py') };
  const rows = [];
  for (const type of ['F16', 'Q8_0']) {
    const out = join(dir, `out-${type}.gguf`);
    const ref = join(dir, `ref-${type}.gguf`);
    const ours = [];
    const oursSync = [];
    const theirs = [];
    for (let i = 0; i < runs; i++) {
      rmSync(out, { force: true });
      ours.push(measure(process.execPath, [CLI, 'convert', model, out, '--gguf-type', type, '--no-fsync']));
      rmSync(out, { force: true });
      oursSync.push(measure(process.execPath, [CLI, 'convert', model, out, '--gguf-type', type]));
      rmSync(ref, { force: true });
      theirs.push(measure(py, [join(src, 'convert_hf_to_gguf.py'), model, '--outfile', ref, '--outtype', type.toLowerCase()], { env }));
    }
    const secs = (xs) => median(xs.map((r) => r.secs));
    const rss = (xs) => Math.max(...xs.map((r) => r.rssMiB));
    rows.push([type, secs(ours), rss(ours), secs(oursSync), secs(theirs), rss(theirs), statSync(out).size, statSync(ref).size]);
  }
  console.log(`model: ${layers} layers, ${(inBytes / 2 ** 30).toFixed(2)} GiB of F32 safetensors; median of ${runs}; load ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  console.log('| type | tensorport --no-fsync | peak RSS | tensorport (fsync) | convert_hf_to_gguf.py | peak RSS | speed-up | output bytes (ours / theirs) |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const [type, t1, r1, t2, t3, r3, b1, b3] of rows) {
    console.log(`| ${type} | ${t1.toFixed(2)} s | ${r1.toFixed(0)} MiB | ${t2.toFixed(2)} s | ${t3.toFixed(2)} s | ${r3.toFixed(0)} MiB | ${(t3 / t1).toFixed(2)}× | ${b1} / ${b3} |`);
  }
  writeFileSync(join(dir, 'done'), '');
} finally {
  rmSync(dir, { recursive: true, force: true });
}
