/**
 * FP8 block-scaled checkpoints (fixtures/quantized/fp8-llama, DeepSeek's layout) through convert:
 * `--dtype bf16|f32` dequantizes to the oracle's bytes (DeepSeek's weight_dequant in torch, checked
 * against transformers' Fp8Dequantize by the generator) and drops quantization_config; without a
 * dtype the codes are copied; broken checkpoints are refused naming the tensor, nothing written;
 * transformers loads the dequantized directory with the oracle model's logits.
 */
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BytesSource, openSafetensors, type TensorDescriptor } from '@tensorport/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { FileSource } from '@tensorport/core/node';
import { identify } from '../src/identify.ts';
import { convertPath, inspectPath, quantizePath, scanPath, validatePath } from '../src/node/index.ts';

const FIX = join(import.meta.dirname, '../../../fixtures/quantized');
const MODEL = join(FIX, 'fp8-llama');
const open = async (path: string) => openSafetensors(new BytesSource(new Uint8Array(await readFile(path))));

async function bytesOf(t: TensorDescriptor): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const c of t.chunks()) parts.push(c);
  return Buffer.concat(parts);
}

async function sameTensors(a: string, b: string): Promise<void> {
  const [x, y] = [await open(a), await open(b)];
  expect(x.tensors.map((t) => t.name).sort()).toEqual(y.tensors.map((t) => t.name).sort());
  const other = new Map(y.tensors.map((t) => [t.name, t]));
  for (const t of x.tensors) {
    const u = other.get(t.name)!;
    expect([t.dtype, t.shape], t.name).toEqual([u.dtype, u.shape]);
    expect((await bytesOf(t)).equals(await bytesOf(u)), t.name).toBe(true);
  }
}

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tensorport-fp8-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('FP8 block-scaled checkpoint → convert', () => {
  it('--dtype bf16 and f32: the oracle’s tensors bit for bit, config.json without quantization_config, a QuantDequantized note', async () => {
    for (const [dtype, oracle] of [['BF16', 'fp8-llama.dequantized-bf16.safetensors'], ['F32', 'fp8-llama.dequantized-f32.safetensors']] as const) {
      const out = join(dir, `plain-${dtype}/`);
      const r = await convertPath({ input: MODEL, output: out, dtype, fsync: false });
      expect(r.warnings.map((w) => w.code)).toContain('QuantDequantized');
      expect((await readdir(out)).sort()).toEqual(['config.json', 'model.safetensors']);
      await sameTensors(join(out, 'model.safetensors'), join(FIX, oracle));
      const config = JSON.parse(await readFile(join(out, 'config.json'), 'utf8')) as Record<string, unknown>;
      expect(config.quantization_config).toBeUndefined();
      expect(config.dtype).toBe(dtype === 'BF16' ? 'bfloat16' : 'float32');
      expect(config.hidden_size).toBe(160);
    }
  });

  it('without --dtype the codes and scales are copied as stored, quantization_config kept', async () => {
    const out = join(dir, 'copy/');
    await convertPath({ input: MODEL, output: out, fsync: false });
    await sameTensors(join(out, 'model.safetensors'), join(MODEL, 'model.safetensors'));
    expect(JSON.parse(await readFile(join(out, 'config.json'), 'utf8')).quantization_config.quant_method).toBe('fp8');
  });

  it('refuses a missing scale, a scale of the wrong shape, and a method it does not dequantize, naming what is wrong; nothing is written', async () => {
    const broken = async (name: string, edit: (ts: readonly TensorDescriptor[]) => TensorDescriptor[], config?: (c: Record<string, unknown>) => void) => {
      const d = join(dir, name);
      await mkdir(d);
      await convertPath({ input: join(MODEL, 'model.safetensors'), output: join(d, 'model.safetensors'), transform: (ck) => ({ tensors: edit(ck.tensors), metadata: ck.metadata }), fsync: false });
      const c = JSON.parse(await readFile(join(MODEL, 'config.json'), 'utf8')) as Record<string, unknown>;
      config?.(c);
      await writeFile(join(d, 'config.json'), JSON.stringify(c));
      return d;
    };
    const noScale = await broken('no-scale', (ts) => ts.filter((t) => t.name !== 'model.layers.1.mlp.up_proj.weight_scale_inv'));
    await expect(convertPath({ input: noScale, output: join(dir, 'out-a/'), dtype: 'BF16', fsync: false })).rejects.toMatchObject({ code: 'QuantMissingScale', tensor: 'model.layers.1.mlp.up_proj.weight' });
    const wrong = await broken('wrong-scale', (ts) => ts.map((t) => (t.name === 'model.layers.0.self_attn.q_proj.weight_scale_inv' ? { name: t.name, dtype: t.dtype, shape: [4, 1], byteLength: t.byteLength, chunks: (c?: number) => t.chunks(c) } : t)));
    await expect(convertPath({ input: wrong, output: join(dir, 'out-b/'), dtype: 'BF16', fsync: false })).rejects.toMatchObject({ code: 'QuantScaleMismatch', tensor: 'model.layers.0.self_attn.q_proj.weight_scale_inv' });
    const gptq = await broken('gptq', (ts) => [...ts], (c) => {
      c.quantization_config = { quant_method: 'gptq', bits: 4, group_size: 128 };
    });
    await expect(convertPath({ input: gptq, output: join(dir, 'out-c/'), dtype: 'BF16', fsync: false })).rejects.toMatchObject({ code: 'QuantUnsupported' });
    for (const o of ['out-a', 'out-b', 'out-c']) expect(await readdir(dir)).not.toContain(o);
    // A broken config.json beside a plain model does not stop a cast; beside FP8 scales it does.
    const plainDir = join(dir, 'broken-config-plain');
    await mkdir(plainDir);
    await copyFile(join(FIX, 'fp8-llama.dequantized-f32.safetensors'), join(plainDir, 'model.safetensors'));
    await writeFile(join(plainDir, 'config.json'), '{"not json');
    await expect(convertPath({ input: join(plainDir, 'model.safetensors'), output: join(dir, 'cast.safetensors'), dtype: 'BF16', fsync: false })).resolves.toMatchObject({ cast: 21 });
    const fp8Dir = join(dir, 'broken-config-fp8');
    await mkdir(fp8Dir);
    await copyFile(join(MODEL, 'model.safetensors'), join(fp8Dir, 'model.safetensors'));
    await writeFile(join(fp8Dir, 'config.json'), '{"not json');
    await expect(convertPath({ input: fp8Dir, output: join(dir, 'out-d/'), dtype: 'BF16', fsync: false })).rejects.toMatchObject({ code: 'MlxInvalidConfig' });
  });
});

describe('FP8 block-scaled checkpoint → GGUF (no FP8 type there: dequantized, then written as the asked type, the error measured)', () => {
  it('F32 is exact: back to safetensors it is the oracle bit for bit; Q8_0 reports the max error the file really has', async () => {
    const f32 = await convertPath({ input: MODEL, output: join(dir, 'fp8.gguf'), gguf: { type: 'F32' }, fsync: false });
    expect(f32.warnings.find((w) => w.code === 'QuantRequantized')?.message).toMatch(/^14 FP8 block-scaled layer\(s\) written as F32 .*: max \|GGUF − FP8 value\| = 0 /);
    const back = join(dir, 'fp8-back/');
    await convertPath({ input: join(dir, 'fp8.gguf'), output: back, fsync: false });
    await sameTensors(join(back, 'model.safetensors'), join(FIX, 'fp8-llama.dequantized-f32.safetensors'));

    const q8 = await convertPath({ input: MODEL, output: join(dir, 'fp8-q8.gguf'), gguf: { type: 'Q8_0' }, fsync: false });
    const said = Number(/= ([0-9.e-]+) /.exec(q8.warnings.find((w) => w.code === 'QuantRequantized')!.message)![1]);
    const q8back = join(dir, 'fp8-q8-back/');
    await convertPath({ input: join(dir, 'fp8-q8.gguf'), output: q8back, fsync: false });
    const [got, want] = [await open(join(q8back, 'model.safetensors')), await open(join(FIX, 'fp8-llama.dequantized-f32.safetensors'))];
    const wanted = new Map(want.tensors.map((t) => [t.name, t]));
    let worst = 0;
    for (const t of got.tensors.filter((x) => x.name.endsWith('_proj.weight'))) {
      const a = new Float32Array(new Uint8Array(await bytesOf(t)).buffer);
      const b = new Float32Array(new Uint8Array(await bytesOf(wanted.get(t.name)!)).buffer);
      for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!));
    }
    expect(worst).toBeGreaterThan(0);
    expect(said).toBe(worst);
  });
});

describe('FP8 block-scaled checkpoint → MLX quantize', () => {
  it('is the MLX quantization of the dequantized model (mlx-lm’s route: BF16 first), no FP8 tensor or config left', async () => {
    const fromFp8 = join(dir, 'mlx-from-fp8/');
    const r = await quantizePath({ input: MODEL, output: fromFp8, bits: 4, groupSize: 32, fsync: false });
    expect(r.warnings.map((w) => w.code)).toContain('QuantRequantized');
    // The same model given as its BF16 oracle weights and the config without quantization_config.
    const plain = join(dir, 'bf16-model');
    await mkdir(plain);
    await copyFile(join(FIX, 'fp8-llama.dequantized-bf16.safetensors'), join(plain, 'model.safetensors'));
    const c = JSON.parse(await readFile(join(MODEL, 'config.json'), 'utf8')) as Record<string, unknown>;
    delete c.quantization_config;
    await writeFile(join(plain, 'config.json'), JSON.stringify(c));
    const fromBf16 = join(dir, 'mlx-from-bf16/');
    await quantizePath({ input: plain, output: fromBf16, bits: 4, groupSize: 32, fsync: false });
    await sameTensors(join(fromFp8, 'model.safetensors'), join(fromBf16, 'model.safetensors'));
    const written = JSON.parse(await readFile(join(fromFp8, 'config.json'), 'utf8')) as Record<string, { quant_method?: string; bits?: number }>;
    expect(written.quantization_config?.quant_method).toBeUndefined();
    expect(written.quantization?.bits).toBe(4);
  });
});

describe('FP8 block-scaled checkpoint → inspect and validate', () => {
  it('inspect names the scheme and its layers; validate passes it, and fails a block size its scales contradict, naming the tensor', async () => {
    const r = await inspectPath(MODEL);
    expect(r.hfQuantization).toEqual({ method: 'fp8', format: 'e4m3', blockSize: [128, 128], activationScheme: 'dynamic', layers: 14, dequantizable: true });
    // identify names it from the bytes alone; the dequantized oracle is plain safetensors
    for (const [file, kind] of [[join(MODEL, 'model.safetensors'), 'fp8-block'], [join(FIX, 'fp8-llama.dequantized-bf16.safetensors'), 'safetensors']] as const) {
      const source = await FileSource.open(file);
      try {
        const id = await identify(source);
        expect(id.kind, file).toBe(kind);
        if (kind === 'fp8-block') expect(id.details.quantizedLayers).toBe(14);
      } finally {
        await source.close();
      }
    }
    expect((await scanPath(join(MODEL, 'model.safetensors'))).verdict).toBe('no-pickle');
    expect((await validatePath(MODEL)).valid).toBe(true);
    const d = join(dir, 'block-64');
    await mkdir(d);
    await copyFile(join(MODEL, 'model.safetensors'), join(d, 'model.safetensors'));
    const c = JSON.parse(await readFile(join(MODEL, 'config.json'), 'utf8')) as { quantization_config: { weight_block_size: number[] } };
    c.quantization_config.weight_block_size = [64, 128];
    await writeFile(join(d, 'config.json'), JSON.stringify(c));
    const v = await validatePath(d);
    expect(v.valid).toBe(false);
    expect(v.errors).toEqual([expect.objectContaining({ code: 'QuantScaleMismatch', tensor: 'model.layers.0.mlp.down_proj.weight_scale_inv' })]);
    expect((await inspectPath(d)).warnings.map((w) => w.code)).toContain('QuantScaleMismatch');
    // Another method is named, not dequantized.
    c.quantization_config = { quant_method: 'awq', bits: 4 } as never;
    await writeFile(join(d, 'config.json'), JSON.stringify(c));
    expect((await inspectPath(d)).hfQuantization).toEqual({ method: 'awq', dequantizable: false });
  });
});

const py = await requirePython(['torch', 'transformers']);

describe.skipIf(!py)('transformers loads the dequantized model', () => {
  it('from_pretrained(out/) gives the logits of the oracle weights', { timeout: 180_000 }, async () => {
    const out = join(dir, 'for-transformers/');
    await convertPath({ input: MODEL, output: out, dtype: 'BF16', fsync: false });
    const script = `
import sys, json
class _NoVision:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('torchvision', 'PIL'): raise ImportError(name)
sys.meta_path.insert(0, _NoVision())
import torch
from transformers import AutoModelForCausalLM
m = AutoModelForCausalLM.from_pretrained(sys.argv[1]).eval()
prompt = json.load(open(sys.argv[2]))['prompt']
with torch.no_grad():
    print(json.dumps({'dtype': str(m.dtype), 'logits': m(torch.tensor([prompt])).logits[0].float().tolist()}))
`;
    const r = JSON.parse((await runPython(py!.exe, script, { args: [out, join(FIX, 'fp8-llama.expected.json')], timeout: 170_000 })).trim().split('\n').pop()!) as { dtype: string; logits: number[][] };
    const expected = JSON.parse(await readFile(join(FIX, 'fp8-llama.expected.json'), 'utf8')) as { logits: number[][] };
    expect(r.dtype).toBe('torch.bfloat16');
    let worst = 0;
    for (let i = 0; i < expected.logits.length; i++) for (let v = 0; v < expected.logits[i]!.length; v++) worst = Math.max(worst, Math.abs(r.logits[i]![v]! - expected.logits[i]![v]!));
    // Same weights, same library, same machine kind: the same logits (up to the 8 digits the file keeps).
    expect(worst).toBeLessThan(1e-5);
  });
});
