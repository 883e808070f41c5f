/**
 * The MLX options of issue 13 through the built CLI: quantize --mode (fp modes), --recipe and
 * --bits-for written into config.json, dequantize --rounding / --global-scale, and inspect's
 * mlx-lm parameter count next to the stored-element totals.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { encodeFloats } from '@tensorport/mlx';
import { describe, expect, it } from 'vitest';
import { safetensorsFile, tempDir, tensorDigests, tensorport } from './helpers.ts';

/** Two decoder layers of 128-wide projections (so layer 1 of 2 is a recipe "more bits" layer). */
async function modelDir(dir: string): Promise<{ dir: string; elements: number }> {
  const tensors: Record<string, { dtype: string; shape: number[]; data: Uint8Array }> = {};
  let elements = 0;
  const add = (name: string, shape: number[]) => {
    const n = shape.reduce((a, b) => a * b, 1);
    elements += n;
    tensors[name] = { dtype: 'BF16', shape, data: encodeFloats(Array.from({ length: n }, (_, i) => Math.sin(i * 0.37 + shape[0]!) * 0.03), 'BF16') };
  };
  add('model.embed_tokens.weight', [32, 128]);
  for (const i of [0, 1]) {
    for (const p of ['q', 'k', 'v', 'o']) add(`model.layers.${i}.self_attn.${p}_proj.weight`, [32, 128]);
    add(`model.layers.${i}.mlp.down_proj.weight`, [32, 128]);
    add(`model.layers.${i}.input_layernorm.weight`, [128]);
  }
  add('lm_head.weight', [32, 128]);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'model.safetensors'), safetensorsFile(tensors));
  await writeFile(join(dir, 'config.json'), JSON.stringify({ model_type: 'llama', num_hidden_layers: 2 }));
  return { dir, elements };
}

describe('quantize --mode, --recipe, --bits-for; dequantize --rounding; inspect counts', () => {
  it('--mode mxfp4: U8 scales, no biases, config mode, mlx-lm parameter count; dequantize --rounding gpu|cpu agree where every scale fits F16', async () => {
    const root = await tempDir();
    const { dir, elements } = await modelDir(join(root, 'src'));
    const r = await tensorport('quantize', dir, `${join(root, 'fp4')}/`, '--mode', 'mxfp4');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('at 4 bits/group 32 (mxfp4)');
    const config = JSON.parse(await readFile(join(root, 'fp4', 'config.json'), 'utf8'));
    expect(config.quantization).toEqual({ group_size: 32, bits: 4, mode: 'mxfp4' });
    const t = await tensorDigests(join(root, 'fp4'));
    expect(t.get('lm_head.scales')!.dtype).toBe('U8');
    expect(t.has('lm_head.biases')).toBe(false);
    const index = JSON.parse(await readFile(join(root, 'fp4', 'model.safetensors.index.json'), 'utf8'));
    expect(index.metadata.total_parameters).toBe(elements);

    const insp = await tensorport('inspect', join(root, 'fp4'), '--json');
    expect(insp.code).toBe(0);
    const report = JSON.parse(insp.stdout);
    expect(report.quantizedParameters).toBe(elements);
    expect(report.totals.parameters).toBeLessThan(elements); // the Hub's count: packed words + scales
    expect((await tensorport('inspect', join(root, 'fp4'))).stdout).toContain('parameters as mlx-lm counts them');

    // A lone file records the mode in __metadata__, so it reads back without config.json.
    const file = join(root, 'fp8.safetensors');
    const f = await tensorport('quantize', join(dir, 'model.safetensors'), file, '--mode', 'mxfp8');
    expect(f.stderr).toBe('');
    expect(f.code).toBe(0);
    const fd = await tensorport('dequantize', file, join(root, 'fp8-back.safetensors'));
    expect(fd.stdout).toContain('at 8 bits/group 32 (mxfp8)');

    const bad = await tensorport('quantize', dir, `${join(root, 'bad')}/`, '--mode', 'mxfp8', '--bits', '4');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('mxfp8 quantization needs 8 bits');

    for (const rounding of ['gpu', 'cpu']) {
      const d = await tensorport('dequantize', join(root, 'fp4'), join(root, `back-${rounding}.safetensors`), '--dtype', 'f16', '--rounding', rounding);
      expect(d.stderr).toBe('');
      expect(d.code).toBe(0);
    }
    // Scales near 2^-8 are exact F16 values, so the CPU path's F16 scale changes nothing here.
    const g = await tensorDigests(join(root, 'back-gpu.safetensors'));
    const c = await tensorDigests(join(root, 'back-cpu.safetensors'));
    expect(g.get('lm_head.weight')!.dtype).toBe('F16');
    for (const [name, d] of g) expect(c.get(name)!.sha256, name).toBe(d.sha256);
  });

  it('--recipe mixed_3_6 with --bits-for: per-module entries as mlx-lm writes them, the override winning', async () => {
    const root = await tempDir();
    const { dir } = await modelDir(join(root, 'src'));
    const out = join(root, 'mixed');
    const r = await tensorport('quantize', dir, `${out}/`, '--recipe', 'mixed_3_6', '--bits-for', 'embed_tokens=8/32', '--bits-for', 'layers\\.0\\..*k_proj=float');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const q = JSON.parse(await readFile(join(out, 'config.json'), 'utf8')).quantization;
    expect(q.bits).toBe(4);
    expect(q['model.layers.1.self_attn.v_proj']).toEqual({ group_size: null, bits: 6, mode: 'affine' });
    expect(q['model.layers.0.self_attn.v_proj']).toEqual({ group_size: null, bits: 3, mode: 'affine' });
    expect(q['lm_head']).toEqual({ group_size: null, bits: 6, mode: 'affine' });
    expect(q['model.embed_tokens']).toEqual({ group_size: 32, bits: 8, mode: 'affine' });
    expect(q['model.layers.0.self_attn.k_proj']).toBeUndefined();
    const t = await tensorDigests(out);
    expect(t.get('model.layers.0.self_attn.k_proj.weight')!.dtype).toBe('BF16');
    expect(t.get('model.layers.1.self_attn.v_proj.weight')!.shape).toEqual([32, 24]); // 128 · 6 / 32

    const bad = await tensorport('quantize', dir, `${join(root, 'x')}/`, '--recipe', 'mixed_9_9');
    expect(bad.code).not.toBe(0);
    const badRule = await tensorport('quantize', dir, `${join(root, 'y')}/`, '--bits-for', 'lm_head');
    expect(badRule.code).not.toBe(0);
    expect(badRule.stderr).toContain('--bits-for');
  });
});
