import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BytesSource, openSafetensors } from '@tensorport/core';
import { dequantizeCheckpoint, findQuantizedLayers, quantizeCheckpoint } from '../src/index.ts';
import { collect } from './helpers/memory.ts';

const dir = fileURLToPath(new URL('../../../fixtures/mlx/', import.meta.url));
const open = async (path: string) => openSafetensors(new BytesSource(new Uint8Array(readFileSync(dir + path)), path));

describe('real MLX sample: mlx-lm LoRA adapter (wyek1n/MLX-CLI)', () => {
  it('opens (unpadded header, null metadata, offsets in hash order) and holds no quantized layer', async () => {
    const ckpt = await open('adapters.safetensors');
    expect(ckpt.metadata).toBeNull();
    expect(ckpt.header.headerLength).toBe(1684);
    expect(ckpt.tensors).toHaveLength(16);
    expect(ckpt.tensors.every((t) => t.dtype === 'F32' && /lora_[ab]$/.test(t.name))).toBe(true);
    const config = JSON.parse(readFileSync(dir + 'adapter_config.json', 'utf8'));
    expect(findQuantizedLayers(ckpt, { config })).toEqual([]);
    const d = dequantizeCheckpoint(ckpt);
    expect(d.tensors).toEqual(ckpt.tensors);
    // LoRA factors are not Linear/Embedding weights: nothing to quantize.
    expect(quantizeCheckpoint(ckpt).layers).toEqual([]);
  });
});

describe('tiny-mixed: an mlx-lm style model with per-module overrides, MoE stacks, an mxfp4 layer', () => {
  const config = JSON.parse(readFileSync(dir + 'tiny-mixed/config.json', 'utf8'));

  it('recognises every layer with the bits, group size and mode config.json gives it', async () => {
    const ckpt = await open('tiny-mixed/model.safetensors');
    expect(Object.fromEntries(ckpt.metadata!)).toEqual({ format: 'mlx' });
    const layers = findQuantizedLayers(ckpt, { config });
    const got = Object.fromEntries(layers.map((l) => [l.path, [l.mode, l.bits, l.groupSize, l.shape.join('x')]]));
    expect(got).toEqual({
      lm_head: ['affine', 4, 64, '16x128'],
      'model.embed_tokens': ['affine', 4, 64, '16x128'],
      'model.layers.0.mlp.experts_fp4': ['mxfp4', 4, 32, '2x8x64'],
      'model.layers.0.mlp.gate': ['affine', 8, 64, '4x128'],
      'model.layers.0.mlp.switch_mlp.down_proj': ['affine', 3, 32, '4x24x96'],
      'model.layers.0.mlp.switch_mlp.gate_proj': ['affine', 2, 128, '4x32x128'],
      'model.layers.0.mlp.switch_mlp.up_proj': ['affine', 5, 128, '4x32x128'],
      'model.layers.0.self_attn.q_proj': ['affine', 4, 64, '64x128'],
      'model.layers.0.self_attn.v_proj': ['affine', 6, 64, '32x128'],
    });
  });

  it('without config.json, the 4-bit/64 layers are ambiguous and refused', async () => {
    const ckpt = await open('tiny-mixed/model.safetensors');
    expect(() => findQuantizedLayers(ckpt)).toThrow(expect.objectContaining({ code: 'MlxAmbiguousQuantization' }));
  });

  it('dequantizes to the expected BF16 values, bit for bit', async () => {
    const ckpt = await open('tiny-mixed/model.safetensors');
    const expected = await open('tiny-mixed/expected-bf16-bits.safetensors');
    const d = dequantizeCheckpoint(ckpt, { config });
    expect(d.tensors.map((t) => t.name).sort()).toEqual(expected.tensors.map((t) => t.name).sort());
    for (const t of d.tensors) {
      const want = expected.tensors.find((e) => e.name === t.name)!;
      expect([t.dtype, [...t.shape]]).toEqual(['BF16', [...want.shape]]);
      expect(Buffer.from(await collect(t)).equals(Buffer.from(await expected.read(t.name))), t.name).toBe(true);
    }
    expect(d.config).not.toHaveProperty('quantization');
    expect(d.config).not.toHaveProperty('quantization_config');
  });
});
