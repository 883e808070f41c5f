/**
 * The MLX commands are convert with a transform (issue 12 item 4), so they have convert's output
 * flags: --verify (the output re-read and diffed), --no-fsync (same bytes, less durability), and
 * every file format the registry writes (.npz, .pt read back by the real numpy and torch).
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { encodeFloats } from '@tensorport/mlx';
import { describe, expect, it } from 'vitest';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { fileSha256, listDir, safetensorsFile, tempDir, tensorDigests, tensorport } from './helpers.ts';

/** Two 64-wide projections (quantized), a norm (kept), in a model directory with config.json. */
async function modelDir(dir: string): Promise<string> {
  const f32 = (n: number, k: number) => encodeFloats(Array.from({ length: n }, (_, i) => Math.sin(i * 0.29 + k) * 0.04), 'F32');
  await mkdir(dir, { recursive: true });
  await writeFile(
    join(dir, 'model.safetensors'),
    safetensorsFile({
      'model.layers.0.self_attn.q_proj.weight': { dtype: 'F32', shape: [16, 64], data: f32(16 * 64, 1) },
      'model.layers.0.mlp.down_proj.weight': { dtype: 'F32', shape: [8, 128], data: f32(8 * 128, 2) },
      'model.norm.weight': { dtype: 'F32', shape: [64], data: f32(64, 3) },
    }),
  );
  await writeFile(join(dir, 'config.json'), '{"model_type": "llama", "rms_norm_eps": 1e-05, "rope_theta": 10000.0}');
  await writeFile(join(dir, 'tokenizer_config.json'), '{}');
  return dir;
}

describe('quantize/dequantize/repack with convert\'s output flags', () => {
  it('--verify re-reads and diffs the output; --no-fsync writes the same bytes', async () => {
    const root = await tempDir();
    const src = await modelDir(join(root, 'src'));
    const a = await tensorport('quantize', src, `${join(root, 'a')}/`, '--verify', '--json');
    expect(a.stderr).toBe('');
    expect(a.code).toBe(0);
    const json = JSON.parse(a.stdout);
    expect(json).toMatchObject({ verified: true, to: 'safetensors', copied: ['tokenizer_config.json'] });
    expect(json.quantization).toHaveLength(2);
    const b = await tensorport('quantize', src, `${join(root, 'b')}/`, '--no-fsync');
    expect(b.stderr).toBe('');
    expect(b.code).toBe(0);
    expect(b.stdout).not.toContain('diffed equal');
    const files = ['config.json', 'model.safetensors', 'model.safetensors.index.json', 'tokenizer_config.json'];
    expect(await listDir(join(root, 'a'))).toEqual(files);
    expect(await listDir(join(root, 'b'))).toEqual(files);
    for (const f of files) expect(await fileSha256(join(root, 'b', f)), f).toBe(await fileSha256(join(root, 'a', f)));
    // config.json is the input's text with the quantization sections edited in (issue 11 item 3): Python's floats stay.
    const config = await readFile(join(root, 'a', 'config.json'), 'utf8');
    expect(config).toContain('"rms_norm_eps": 1e-05');
    expect(config).toContain('"rope_theta": 10000.0');
    expect(JSON.parse(config).quantization).toEqual({ group_size: 64, bits: 4, mode: 'affine' });
    expect((await tensorport('dequantize', join(root, 'a'), `${join(root, 'back')}/`, '--verify')).code).toBe(0);
    const back = await readFile(join(root, 'back', 'config.json'), 'utf8');
    expect(back).toContain('"rope_theta": 10000.0');
    expect(JSON.parse(back)).toEqual({ model_type: 'llama', rms_norm_eps: 1e-5, rope_theta: 10000 });

    const d = await tensorport('dequantize', join(root, 'a'), join(root, 'back.safetensors'), '--verify', '--no-fsync');
    expect(d.code).toBe(0);
    expect(d.stdout).toContain('validated and diffed equal');
    const r = await tensorport('repack', join(root, 'a'), `${join(root, 'r')}/`, '--bits', '8', '--group-size', '32', '--verify');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('2 lossless');
    expect(r.stdout).toContain('validated and diffed equal');
  });

  it('a file output in another format: a mixed quantization is refused there too, --to picks the format', async () => {
    const root = await tempDir();
    const src = await modelDir(join(root, 'src'));
    const mixed = await tensorport('quantize', src, join(root, 'm.npz'), '--bits-for', 'down_proj=8');
    expect(mixed.code).toBe(2);
    expect(mixed.stderr).toContain('write to a directory');
    const q = await tensorport('quantize', src, join(root, 'q.weights'), '--to', 'npz', '--json');
    expect(q.code).toBe(0);
    expect(JSON.parse(q.stdout).to).toBe('npz');
    // GGUF has no MLX-quantized type: its writer refuses the U32 codes, and nothing is written.
    const gguf = await tensorport('quantize', src, join(root, 'q.gguf'));
    expect(gguf.code).toBe(1);
    expect(gguf.stderr).toContain('no ggml type for dtype U32');
    expect(await listDir(root)).toEqual(['q.weights', 'src']);
  });
});

describe('quantize with --jobs, --max-shard-size and --metadata', () => {
  it('two jobs write the bytes one job writes; shards stay under the limit and the index names each; entries land in every shard', async () => {
    const root = await tempDir();
    const src = await modelDir(join(root, 'src'));
    const flags = ['--bits', '8', '--group-size', '32', '--max-shard-size', '1KB', '--metadata', 'license=mit', '--metadata', 'note=a=b'];
    const one = await tensorport('quantize', src, `${join(root, 'one')}/`, ...flags, '--jobs', '1');
    expect(one.stderr).toBe('');
    expect(one.code).toBe(0);
    const two = await tensorport('quantize', src, `${join(root, 'two')}/`, ...flags, '--jobs', '2');
    expect(two.code, two.stderr).toBe(0);
    const files = await listDir(join(root, 'one'));
    const shards = files.filter((f) => f.endsWith('.safetensors'));
    expect(shards.length).toBeGreaterThan(1);
    expect(await listDir(join(root, 'two'))).toEqual(files);
    for (const f of files) expect(await fileSha256(join(root, 'two', f)), f).toBe(await fileSha256(join(root, 'one', f)));
    const index = JSON.parse(await readFile(join(root, 'one', 'model.safetensors.index.json'), 'utf8')) as { weight_map: Record<string, string> };
    expect([...new Set(Object.values(index.weight_map))].sort()).toEqual(shards);
    for (const shard of shards) {
      const bytes = await readFile(join(root, 'one', shard));
      const headerLength = Number(bytes.readBigUInt64LE(0));
      const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString('utf8')) as { __metadata__: Record<string, string> };
      expect(header.__metadata__, shard).toMatchObject({ license: 'mit', note: 'a=b', format: 'mlx' });
      // A shard holding one tensor larger than the limit is that tensor alone, as in transformers' sharding.
      const tensors = Object.keys(header).filter((k) => k !== '__metadata__');
      if (bytes.length > 1000) expect(tensors, shard).toHaveLength(1);
    }
    const d = await tensorport('dequantize', join(root, 'two'), join(root, 'back.safetensors'), '--jobs', '2', '--metadata', 'k=v', '--verify');
    expect(d.code, d.stderr).toBe(0);
    expect(d.stdout).toContain('validated and diffed equal');
  });
});

const py = await requirePython(['numpy', 'torch']);
describe.skipIf(!py)('dequantize into .npz and .pt, read by numpy and torch', () => {
  it('np.load and torch.load(weights_only=True) give the values of the safetensors output', { timeout: 180_000 }, async () => {
    const root = await tempDir();
    const src = await modelDir(join(root, 'src'));
    const q = join(root, 'q');
    expect((await tensorport('quantize', src, `${q}/`, '--bits', '4', '--group-size', '32')).code).toBe(0);
    const want = join(root, 'back.safetensors');
    expect((await tensorport('dequantize', q, want)).code).toBe(0);
    for (const out of ['back.npz', 'back.pt']) {
      const r = await tensorport('dequantize', q, join(root, out), '--verify');
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
    }
    const got = await runPython(
      py!.exe,
      `
import hashlib, json, sys
import numpy as np, torch
def digest(a):
    return {"dtype": str(a.dtype), "shape": list(a.shape), "sha256": hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()}
with np.load(sys.argv[1]) as z:
    npz = {k: digest(z[k]) for k in z.files}
pt = {k: digest(v.numpy()) for k, v in torch.load(sys.argv[2], weights_only=True).items()}
print(json.dumps({"npz": npz, "pt": pt}))
`,
      { args: [join(root, 'back.npz'), join(root, 'back.pt')], timeout: 170_000 },
    );
    const read = JSON.parse(got.trim().split('\n').pop()!) as Record<'npz' | 'pt', Record<string, { dtype: string; shape: number[]; sha256: string }>>;
    const expected = await tensorDigests(want);
    for (const which of ['npz', 'pt'] as const) {
      expect(Object.keys(read[which]).sort(), which).toEqual([...expected.keys()].sort());
      for (const [name, t] of expected) expect(read[which][name], `${which} ${name}`).toEqual({ dtype: 'float32', shape: t.shape, sha256: t.sha256 });
    }
  });
});
