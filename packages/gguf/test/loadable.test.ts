/**
 * llamaCppFindings: the checks llama.cpp's loader makes, on a GGUF tensorport writes from the
 * committed Qwen2 and Llama models (loadable: no finding; llama.cpp itself loads them in
 * packages/lib/test/llama-cpp.interop.test.ts) and on copies broken one way at a time.
 */
import { readFile } from 'node:fs/promises';
import { BytesSource, MemorySink, openSafetensors, type TensorDescriptor } from '@tensorport/core';
import { describe, expect, it } from 'vitest';
import { ggufArchitecture, gguf, llamaCppFindings, llamaToGguf, openGguf, writeGguf, type GgufValue, type GgufWriteTensor, type LlamaConfig } from '../src/index.ts';
import { FIX } from './helpers.ts';

async function converted(arch: 'qwen2' | 'qwen3' | 'phi3' | 'llama') {
  const dir = new URL(`hf-models/${arch}/`, FIX);
  const json = async (name: string) => JSON.parse(await readFile(new URL(name, dir), 'utf8')) as Record<string, unknown>;
  const config = (await json('config.json')) as LlamaConfig;
  const st = await openSafetensors(new BytesSource(new Uint8Array(await readFile(new URL('model.safetensors', dir)))));
  return llamaToGguf(st.tensors, config, { outtype: 'F32', architecture: ggufArchitecture(config)!, tokenizer: await json('tokenizer.json'), tokenizerConfig: await json('tokenizer_config.json') });
}

async function written(tensors: readonly GgufWriteTensor[], kv: Iterable<readonly [string, GgufValue]>) {
  const sink = new MemorySink();
  await writeGguf(tensors, kv, sink);
  return openGguf(new BytesSource(sink.bytes()));
}

const messages = async (tensors: readonly GgufWriteTensor[], kv: Iterable<readonly [string, GgufValue]>) => llamaCppFindings(await written(tensors, kv)).map((f) => f.message);

describe('llamaCppFindings', () => {
  it('finds nothing in the GGUF tensorport writes from a Qwen2, Qwen3 and Llama model directory', async () => {
    for (const arch of ['qwen2', 'qwen3', 'phi3', 'llama'] as const) {
      const r = await converted(arch);
      expect(llamaCppFindings(await written(r.tensors, r.metadata))).toEqual([]);
    }
  });

  it('names each thing llama.cpp would refuse', async () => {
    const r = await converted('qwen2');
    const without = (key: string) => r.metadata.filter(([k]) => k !== key);
    const replaced = (key: string, v: GgufValue) => r.metadata.map(([k, old]): [string, GgufValue] => [k, k === key ? v : old]);

    expect(await messages(r.tensors, without('qwen2.context_length'))).toEqual(['llama.cpp needs qwen2.context_length (UINT32); it is missing']);
    expect(await messages(r.tensors, replaced('qwen2.block_count', gguf.u64(2n)))).toEqual(['llama.cpp reads qwen2.block_count as UINT32 only; it is UINT64']);
    expect(await messages(r.tensors, replaced('qwen2.attention.layer_norm_rms_epsilon', gguf.f64(1e-5)))).toEqual(['llama.cpp needs qwen2.attention.layer_norm_rms_epsilon (FLOAT32); it is FLOAT64']);
    expect(await messages(r.tensors, r.metadata.filter(([k]) => !k.startsWith('tokenizer.')))).toEqual([
      'llama.cpp needs tokenizer.ggml.model (STRING); it is missing: convert from a directory with tokenizer.json',
    ]);
    expect(await messages(r.tensors, without('tokenizer.ggml.merges'))).toEqual(['a gpt2 tokenizer needs tokenizer.ggml.merges (an array of strings)']);
    expect(await messages(r.tensors, replaced('tokenizer.ggml.token_type', gguf.array('INT32', new Int32Array(3))))).toEqual([
      'tokenizer.ggml.token_type must be 336 INT32 values, one per token (llama.cpp reads it unchecked); it is 3 values',
    ]);
    expect(await messages(r.tensors, replaced('tokenizer.ggml.model', gguf.str('sentencepiece')))).toEqual([
      'tokenizer.ggml.model "sentencepiece" is not one llama.cpp knows (llama, gpt2, bert, t5, rwkv, plamo2, none, no_vocab)',
    ]);

    // Biases are optional (llama.cpp loads a qwen2 file without one), but one present has its shape.
    expect(await messages(r.tensors.filter((t) => t.name !== 'blk.1.attn_k.bias'), r.metadata)).toEqual([]);
    const wideBias: TensorDescriptor = { ...r.tensors.find((t) => t.name === 'blk.1.attn_q.bias')!, name: 'blk.1.attn_k.bias' };
    expect(llamaCppFindings(await written([...r.tensors.filter((t) => t.name !== 'blk.1.attn_k.bias'), wideBias], r.metadata))).toEqual([
      { code: 'GgufNotLoadable', message: "tensor blk.1.attn_k.bias has dims [64]; llama.cpp's qwen2 graph makes [32]", tensor: 'blk.1.attn_k.bias' },
    ]);
    expect(await messages(r.tensors.filter((t) => t.name !== 'blk.0.ffn_up.weight'), r.metadata)).toEqual(["llama.cpp's qwen2 graph needs tensor blk.0.ffn_up.weight; it is missing"]);
    const extra: TensorDescriptor = { ...r.tensors.find((t) => t.name === 'output_norm.weight')!, name: 'blk.0.post_norm.weight' };
    expect(await messages([...r.tensors, extra], r.metadata)).toEqual([
      "1 tensor(s) llama.cpp's qwen2 graph does not use (blk.0.post_norm.weight): it refuses the file (wrong number of tensors)",
    ]);
    // One row short of the vocabulary: token_embd must have a row per token.
    const shortVocab = replaced('tokenizer.ggml.tokens', gguf.strings(Array.from({ length: 335 }, (_, i) => `t${i}`)));
    const found = await messages(r.tensors, shortVocab.map(([k, v]): [string, GgufValue] => [k, k === 'tokenizer.ggml.token_type' ? gguf.array('INT32', new Int32Array(335)) : v]));
    expect(found).toEqual(["tensor token_embd.weight has dims [64, 336]; llama.cpp's qwen2 graph makes [64, 335]"]);
  });

  it('qwen3: its per-head q/k norms are required, sized by key_length (head_dim 32, not hidden/heads 16)', async () => {
    const r = await converted('qwen3');
    expect(await messages(r.tensors.filter((t) => t.name !== 'blk.1.attn_k_norm.weight'), r.metadata)).toEqual(["llama.cpp's qwen3 graph needs tensor blk.1.attn_k_norm.weight; it is missing"]);
    const q = r.tensors.find((t) => t.name === 'blk.0.attn_q.weight')!;
    expect(q.shape).toEqual([128, 64]);
    const noKeyLength = r.metadata.filter(([k]) => k !== 'qwen3.attention.key_length' && k !== 'qwen3.attention.value_length');
    const found = await messages(r.tensors, noKeyLength);
    expect(found).toContain("tensor blk.0.attn_q.weight has dims [64, 128]; llama.cpp's qwen3 graph makes [64, 64]");
    expect(found).toContain("tensor blk.0.attn_q_norm.weight has dims [32]; llama.cpp's qwen3 graph makes [16]");
  });

  it('phi3: fused attn_qkv and a double-width ffn_up, named and sized; its two keys', async () => {
    const r = await converted('phi3');
    const names = r.tensors.map((t) => t.name);
    expect(names).toContain('blk.0.attn_qkv.weight');
    expect(names.some((n) => /attn_[qkv]\.weight$|ffn_gate/.test(n))).toBe(false);
    const kv = new Map(r.metadata);
    expect(kv.get('general.architecture')).toEqual({ type: 'STRING', value: 'phi3' });
    expect(kv.get('phi3.attention.sliding_window')).toEqual({ type: 'UINT32', value: 0 });
    expect(kv.get('phi3.rope.scaling.original_context_length')).toEqual({ type: 'UINT32', value: 4096 });
    const narrow: TensorDescriptor = { ...r.tensors.find((t) => t.name === 'blk.0.ffn_down.weight')!, name: 'blk.0.ffn_up.weight', shape: [64, 160] };
    expect(await messages(r.tensors.map((t) => (t.name === 'blk.0.ffn_up.weight' ? { ...narrow, shape: [160, 64] } : t)), r.metadata)).toEqual([
      "tensor blk.0.ffn_up.weight has dims [64, 160]; llama.cpp's phi3 graph makes [64, 320]",
    ]);
  });

  it('checks rope.dimension_count against the head size for llama, and nothing of other architectures', async () => {
    const r = await converted('llama');
    const bad = r.metadata.map(([k, v]): [string, GgufValue] => [k, k === 'llama.rope.dimension_count' ? gguf.u32(8) : v]);
    expect(await messages(r.tensors, bad)).toEqual(['llama.rope.dimension_count is 8, not the head size 16 (llama.cpp: invalid n_rot)']);
    const other = r.metadata.map(([k, v]): [string, GgufValue] => [k, k === 'general.architecture' ? gguf.str('gemma3') : v]);
    expect(await messages(r.tensors, other)).toEqual([]);
  });
});
