import { readFile } from 'node:fs/promises';
import { BytesSource, MemorySink, TensorportError, openSafetensors, type TensorDescriptor } from '@tensorport/core';
import { describe, expect, it } from 'vitest';
import {
  bpePreTokenizer, dequantizeBlocks, ggufArchitecture, ggufToHfName, llama3RopeFactors, hfToGgufName, llamaConfigFromGguf, llamaFromGguf, llamaToGguf, openGguf, writeGguf, llamaMetadata, llamaTokenizerMetadata, permuteQK, qkRowOrder, TOKEN_TYPE, type GgufValue, type LlamaConfig,
} from '../src/index.ts';
import { FIX, bytesOf } from './helpers.ts';

const CONFIG: LlamaConfig = {
  hidden_size: 64, intermediate_size: 160, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2,
  max_position_embeddings: 128, rms_norm_eps: 1e-5, rope_parameters: { rope_theta: 500000, rope_type: 'default' }, vocab_size: 96,
};

describe('names', () => {
  it('maps every llama tensor kind both ways', () => {
    const pairs = [
      ['model.embed_tokens.weight', 'token_embd.weight'], ['model.norm.weight', 'output_norm.weight'], ['lm_head.weight', 'output.weight'],
      ['model.layers.0.input_layernorm.weight', 'blk.0.attn_norm.weight'], ['model.layers.11.self_attn.q_proj.weight', 'blk.11.attn_q.weight'],
      ['model.layers.3.self_attn.k_proj.bias', 'blk.3.attn_k.bias'], ['model.layers.3.self_attn.v_proj.weight', 'blk.3.attn_v.weight'],
      ['model.layers.3.self_attn.o_proj.weight', 'blk.3.attn_output.weight'], ['model.layers.3.post_attention_layernorm.weight', 'blk.3.ffn_norm.weight'],
      ['model.layers.3.mlp.gate_proj.weight', 'blk.3.ffn_gate.weight'], ['model.layers.3.mlp.up_proj.weight', 'blk.3.ffn_up.weight'],
      ['model.layers.3.mlp.down_proj.weight', 'blk.3.ffn_down.weight'],
    ];
    for (const [hf, g] of pairs) {
      expect(hfToGgufName(hf!)).toBe(g);
      expect(ggufToHfName(g!)).toBe(hf);
    }
    expect(ggufToHfName('rope_freqs.weight')).toBeNull();
    expect(hfToGgufName('model.layers.0.self_attn.rotary_emb.inv_freq')).toBeNull();
  });
});

describe('q/k permutation', () => {
  it('pairs rotate-half rows as llama.cpp expects, and inverts', () => {
    // H = 2, hd = 8: GGUF rows come from HF rows 0,4,1,5,2,6,3,7 within each head.
    expect(Array.from(qkRowOrder(8, true))).toEqual([0, 4, 1, 5, 2, 6, 3, 7]);
    const fwd = qkRowOrder(16, true);
    const inv = qkRowOrder(16, false);
    for (let r = 0; r < 16; r++) expect(fwd[inv[r]!]).toBe(r);
  });

  it('streams head by head, whatever the chunking, and refuses rows that do not split into heads', async () => {
    const rows = 16;
    const rowBytes = 3;
    const bytes = new Uint8Array(rows * rowBytes).map((_, i) => Math.floor(i / rowBytes));
    const desc: TensorDescriptor = { name: 'q', dtype: 'U8', shape: [rows, rowBytes], byteLength: bytes.byteLength, chunks: async function* () { for (let i = 0; i < bytes.length; i += 5) yield bytes.subarray(i, i + 5); } };
    const p = await bytesOf(permuteQK(desc, 2, rowBytes, true));
    const order = Array.from({ length: rows }, (_, r) => p[r * rowBytes]);
    expect(order).toEqual([0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15]);
    const back = await bytesOf(permuteQK({ ...desc, chunks: async function* () { yield p; } }, 2, rowBytes, false));
    expect(Array.from(back)).toEqual(Array.from(bytes));
    expect(() => permuteQK(desc, 3, rowBytes, true)).toThrow(TensorportError);
  });
});

describe('metadata', () => {
  it('writes llama.* keys with the types llama.cpp requires and reads a config back', () => {
    const kv = new Map<string, GgufValue>(llamaMetadata(CONFIG, { fileType: 1 }));
    expect([...kv.keys()][0]).toBe('general.architecture');
    expect(kv.get('llama.block_count')).toEqual({ type: 'UINT32', value: 2 });
    expect(kv.get('llama.attention.head_count_kv')).toEqual({ type: 'UINT32', value: 2 });
    expect(kv.get('llama.rope.freq_base')).toEqual({ type: 'FLOAT32', value: 500000 });
    expect(kv.get('llama.rope.dimension_count')).toEqual({ type: 'UINT32', value: 16 });
    expect(kv.get('llama.attention.layer_norm_rms_epsilon')?.type).toBe('FLOAT32');
    const back = llamaConfigFromGguf(kv, { vocabSize: 96, tied: true, dtype: 'float16' });
    expect(back).toMatchObject({ hidden_size: 64, intermediate_size: 160, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, max_position_embeddings: 128, rms_norm_eps: 1e-5, rope_theta: 500000, tie_word_embeddings: true });
    expect(() => llamaConfigFromGguf(new Map([['general.architecture', { type: 'STRING', value: 'qwen2' }]]), { vocabSize: 1, tied: true, dtype: 'float32' })).toThrow(TensorportError);
  });

  it('builds tokenizer metadata from tokenizer.json: byte-level BPE and byte-fallback BPE', () => {
    const bpe = {
      model: { type: 'BPE', vocab: { a: 0, b: 1, ab: 2 }, merges: [['a', 'b']] },
      added_tokens: [{ id: 3, content: '<|begin_of_text|>', special: true }, { id: 4, content: '<tool>', special: false }],
    };
    const kv = new Map(llamaTokenizerMetadata(bpe, { bos_token: '<|begin_of_text|>', chat_template: '{{x}}' }));
    expect(kv.get('tokenizer.ggml.model')).toEqual({ type: 'STRING', value: 'gpt2' });
    expect(kv.get('tokenizer.ggml.tokens')).toEqual({ type: 'ARRAY', value: { elementType: 'STRING', values: ['a', 'b', 'ab', '<|begin_of_text|>', '<tool>'] } });
    expect(kv.get('tokenizer.ggml.merges')).toEqual({ type: 'ARRAY', value: { elementType: 'STRING', values: ['a b'] } });
    const types = kv.get('tokenizer.ggml.token_type')!;
    expect(types.type === 'ARRAY' && Array.from(types.value.values as Int32Array)).toEqual([1, 1, 1, TOKEN_TYPE.CONTROL, TOKEN_TYPE.USER_DEFINED]);
    expect(kv.get('tokenizer.ggml.bos_token_id')).toEqual({ type: 'UINT32', value: 3 });
    expect(kv.get('tokenizer.chat_template')).toEqual({ type: 'STRING', value: '{{x}}' });

    const spm = { model: { type: 'BPE', byte_fallback: true, unk_token: '<unk>', vocab: { '<unk>': 0, '<s>': 1, '</s>': 2, '<0x0A>': 3, '▁a': 4 } }, added_tokens: [{ id: 1, content: '<s>', special: true }, { id: 2, content: '</s>', special: true }] };
    const kv2 = new Map(llamaTokenizerMetadata(spm, { add_bos_token: true }));
    expect(kv2.get('tokenizer.ggml.model')).toEqual({ type: 'STRING', value: 'llama' });
    const t2 = kv2.get('tokenizer.ggml.token_type')!;
    expect(t2.type === 'ARRAY' && Array.from(t2.value.values as Int32Array)).toEqual([TOKEN_TYPE.UNKNOWN, 3, 3, TOKEN_TYPE.BYTE, 1]);
    const scores = kv2.get('tokenizer.ggml.scores')!;
    expect(scores.type === 'ARRAY' && scores.value.elementType).toBe('FLOAT32');
    expect(kv2.get('tokenizer.ggml.add_bos_token')).toEqual({ type: 'BOOL', value: true });
    expect(() => llamaTokenizerMetadata({ model: { type: 'Unigram' } })).toThrow(TensorportError);
  });

  it('names the pre-tokenizer from the split regex of the committed Llama 3-style and Qwen2-style tokenizers; gpt2 and default otherwise', async () => {
    const tokenizer = async (arch: string) => JSON.parse(await readFile(new URL(`hf-models/${arch}/tokenizer.json`, FIX), 'utf8')) as unknown;
    expect(bpePreTokenizer(await tokenizer('llama'))).toBe('llama-bpe');
    expect(bpePreTokenizer(await tokenizer('qwen2'))).toBe('qwen2');
    expect(bpePreTokenizer({ pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, use_regex: true } })).toBe('gpt2');
    expect(bpePreTokenizer({ pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Split', pattern: { Regex: '\\s+' } }, { type: 'ByteLevel', use_regex: false }] } })).toBe('default');
    expect(bpePreTokenizer({ pre_tokenizer: null })).toBe('default');
    const kv = new Map(llamaTokenizerMetadata(await tokenizer('qwen2'), {}, { pre: 'custom' }));
    expect(kv.get('tokenizer.ggml.pre')).toEqual({ type: 'STRING', value: 'custom' });
  });

  it('pads the vocabulary to the embedding rows and takes bos/eos ids from config.json when tokenizer_config.json names none', () => {
    const bpe = { model: { type: 'BPE', vocab: { a: 0, b: 1, ab: 2 }, merges: [['a', 'b']] }, added_tokens: [{ id: 3, content: '<|endoftext|>', special: true }] };
    const kv = new Map(llamaTokenizerMetadata(bpe, {}, { vocabSize: 6, modelConfig: { bos_token_id: null, eos_token_id: [3, 1] } }));
    const tokens = kv.get('tokenizer.ggml.tokens')!;
    expect(tokens.type === 'ARRAY' && tokens.value.values).toEqual(['a', 'b', 'ab', '<|endoftext|>', '[PAD4]', '[PAD5]']);
    const types = kv.get('tokenizer.ggml.token_type')!;
    expect(types.type === 'ARRAY' && Array.from(types.value.values as Int32Array)).toEqual([1, 1, 1, TOKEN_TYPE.CONTROL, TOKEN_TYPE.UNUSED, TOKEN_TYPE.UNUSED]);
    expect(kv.get('tokenizer.ggml.eos_token_id')).toEqual({ type: 'UINT32', value: 3 });
    expect(kv.has('tokenizer.ggml.bos_token_id')).toBe(false);
    // An id past the vocabulary is no token: left out rather than written for llama.cpp to refuse.
    const kv2 = new Map(llamaTokenizerMetadata(bpe, {}, { modelConfig: { eos_token_id: 99 } }));
    expect(kv2.has('tokenizer.ggml.eos_token_id')).toBe(false);
  });

  it('rope scaling: yarn keys with the original context and its factors; llama3 as frequency factors, none for default', () => {
    const yarn = new Map(llamaMetadata({ ...CONFIG, rope_parameters: { rope_theta: 1e6, rope_type: 'yarn', factor: 4, original_max_position_embeddings: 32768, beta_fast: 32, attention_factor: 1.1 } }));
    expect(yarn.get('llama.rope.scaling.type')).toEqual({ type: 'STRING', value: 'yarn' });
    expect(yarn.get('llama.rope.scaling.factor')).toEqual({ type: 'FLOAT32', value: 4 });
    expect(yarn.get('llama.rope.scaling.original_context_length')).toEqual({ type: 'UINT32', value: 32768 });
    expect(yarn.get('llama.rope.scaling.yarn_beta_fast')).toEqual({ type: 'FLOAT32', value: 32 });
    expect(yarn.get('llama.rope.scaling.yarn_attn_factor')).toEqual({ type: 'FLOAT32', value: 1.1 });
    expect(yarn.has('llama.rope.scaling.yarn_beta_slow')).toBe(false);
    const l3 = { ...CONFIG, rope_parameters: { rope_theta: 500000, rope_type: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 8192 } };
    expect([...new Map(llamaMetadata(l3)).keys()].some((k) => k.startsWith('llama.rope.scaling'))).toBe(false);
    // Llama 3.1 8B's head (128): the shortest wavelengths keep factor 1, the longest get 8, a blend between.
    const f = llama3RopeFactors(l3, 128)!;
    expect(f.length).toBe(64);
    expect(f[0]).toBe(1);
    expect(f[63]).toBe(8);
    const blended = [...f].filter((x) => x > 1 && x < 8);
    expect(blended.length).toBeGreaterThan(0);
    expect([...f]).toEqual([...f].sort((a, b) => a - b));
    expect(llama3RopeFactors(CONFIG, 16)).toBeNull();
  });

  it('maps Llama, Mistral and Qwen2 configs to their GGUF architecture; Qwen2 keeps its Q/K rows and writes qwen2.* keys', () => {
    expect(ggufArchitecture({ architectures: ['MistralForCausalLM'] })).toEqual({ name: 'llama', permuteQK: true, fused: false, qkNorms: false, biases: ['attn_q.bias', 'attn_k.bias', 'attn_v.bias', 'attn_output.bias'] });
    expect(ggufArchitecture({ model_type: 'llama' })).toEqual({ name: 'llama', permuteQK: true, fused: false, qkNorms: false, biases: ['attn_q.bias', 'attn_k.bias', 'attn_v.bias', 'attn_output.bias'] });
    expect(ggufArchitecture({ architectures: ['Qwen2ForCausalLM'], model_type: 'qwen2' })).toEqual({ name: 'qwen2', permuteQK: false, fused: false, qkNorms: false, biases: ['attn_q.bias', 'attn_k.bias', 'attn_v.bias'] });
    expect(ggufArchitecture({ architectures: ['Qwen3ForCausalLM'] })).toEqual({ name: 'qwen3', permuteQK: false, fused: false, qkNorms: true, biases: [] });
    expect(hfToGgufName('model.layers.3.self_attn.q_norm.weight')).toBe('blk.3.attn_q_norm.weight');
    expect(ggufToHfName('blk.3.attn_k_norm.weight')).toBe('model.layers.3.self_attn.k_norm.weight');
    expect(ggufArchitecture({ architectures: ['Phi3ForCausalLM'] })?.name).toBe('phi3');
    expect(hfToGgufName('model.layers.2.self_attn.qkv_proj.weight', ggufArchitecture({ model_type: 'phi3' })!.layerNames)).toBe('blk.2.attn_qkv.weight');
    expect(hfToGgufName('model.layers.2.self_attn.qkv_proj.weight')).toBeNull();
    expect(ggufToHfName('blk.2.ffn_up.weight')).toBe('model.layers.2.mlp.up_proj.weight');
    expect(ggufArchitecture({ architectures: ['GPT2LMHeadModel'], model_type: 'gpt2' })).toBeNull();
    expect(ggufArchitecture(undefined)).toBeNull();
    const kv = new Map(llamaMetadata(CONFIG, { architecture: 'qwen2' }));
    expect(kv.get('general.architecture')).toEqual({ type: 'STRING', value: 'qwen2' });
    expect(kv.get('qwen2.block_count')).toEqual({ type: 'UINT32', value: CONFIG.num_hidden_layers });
    expect([...kv.keys()].some((k) => k.startsWith('llama.'))).toBe(false);
  });
});

describe('tiny llama round trips (no Python)', () => {
  async function load() {
    const dir = new URL('tiny-llama/', FIX);
    const config = JSON.parse(await readFile(new URL('config.json', dir), 'utf8')) as LlamaConfig;
    const st = await openSafetensors(new BytesSource(new Uint8Array(await readFile(new URL('model.safetensors', dir)))));
    return { config, st };
  }
  async function toGguf(outtype: 'F32' | 'Q8_0') {
    const { config, st } = await load();
    const conv = llamaToGguf(st.tensors, config, { outtype });
    const sink = new MemorySink();
    await writeGguf(conv.tensors, conv.metadata, sink);
    return { st, g: await openGguf(new BytesSource(sink.bytes())) };
  }

  it('F32: every tensor comes back byte for byte under its HF name', async () => {
    const { st, g } = await toGguf('F32');
    const back = llamaFromGguf(g, { dtype: 'F32' });
    for (const t of back.tensors) expect(Buffer.from(await bytesOf(t, 999)).equals(Buffer.from(await st.read(t.name))), t.name).toBe(true);
    expect(back.config).toMatchObject({ architectures: ['LlamaForCausalLM'], tie_word_embeddings: false });
  });

  it('keep: raw Q8_0 rows un-permuted, types recorded, and they dequantize to the F32 output', async () => {
    const { g } = await toGguf('Q8_0');
    const kept = llamaFromGguf(g, { dtype: 'keep' });
    const f32 = llamaFromGguf(g, { dtype: 'F32' });
    expect(kept.metadata.get('gguf.type.model.layers.0.self_attn.q_proj.weight')).toBe('Q8_0');
    expect(kept.metadata.get('gguf.shape.model.layers.0.self_attn.k_proj.weight')).toBe('[32,64]');
    expect(kept.metadata.get('format')).toBe('pt');
    for (const [i, t] of kept.tensors.entries()) {
      const type = kept.metadata.get(`gguf.type.${t.name}`)!;
      const raw = await bytesOf(t);
      const want = await bytesOf(f32.tensors[i]!);
      const got = type === 'F32' ? raw : new Uint8Array(dequantizeBlocks(type, raw).buffer);
      expect(Buffer.from(got).equals(Buffer.from(want)), t.name).toBe(true);
    }
  });
});

