/**
 * The MLX commands end to end through the built CLI: quantize → dequantize round trips within the
 * documented error bound, lossless repack bit-exact, refusals with exit 1, pure --json, inspect's
 * quantization table, MLX .npz input, and the output loading in Python's safetensors.
 */
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FileSink } from '@tensorport/core/node';
import { decodeFloats, encodeFloats, type FloatDType } from '@tensorport/mlx';
import { writeNpz } from '@tensorport/npz';
import { beforeAll, describe, expect, it } from 'vitest';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { REPO, fileSha256, listDir, safetensorsFile, tempDir, tensorDigests, tensorport } from './helpers.ts';

/** Runs the CLI and expects success; stderr first, so a failure shows its message. */
async function ok(...args: string[]) {
  const r = await tensorport(...args);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return r;
}

type Spec = { dtype: FloatDType; shape: number[] };

/** A small llama-like layout: quantizable projections/embeddings, plus norms and a bias that stay float. */
const LAYOUT: Record<string, Spec> = {
  'model.embed_tokens.weight': { dtype: 'F32', shape: [32, 128] },
  'model.layers.0.self_attn.q_proj.weight': { dtype: 'F32', shape: [64, 128] },
  'model.layers.0.self_attn.q_proj.bias': { dtype: 'F32', shape: [64] },
  'model.layers.0.mlp.down_proj.weight': { dtype: 'F32', shape: [128, 192] },
  'model.layers.0.input_layernorm.weight': { dtype: 'F32', shape: [128] },
  'model.norm.weight': { dtype: 'F32', shape: [128] },
};

/** Deterministic weights (normal-ish, σ 0.02, with a few outliers so groups differ in range). */
function values(n: number, seed: number): Float32Array {
  let s = seed >>> 0;
  const v = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    let acc = 0;
    for (let k = 0; k < 4; k++) {
      s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
      acc += s / 2 ** 32 - 0.5;
    }
    v[i] = acc * 0.035 * (i % 97 === 0 ? 8 : 1);
  }
  return v;
}

function model(dtype: FloatDType): Record<string, { dtype: string; shape: number[]; data: Uint8Array }> {
  const out: Record<string, { dtype: string; shape: number[]; data: Uint8Array }> = {};
  let seed = 1;
  for (const [name, spec] of Object.entries(LAYOUT)) {
    const n = spec.shape.reduce((a, b) => a * b, 1);
    out[name] = { dtype, shape: spec.shape, data: encodeFloats(values(n, seed++), dtype) };
  }
  return out;
}

const QUANTIZED = ['model.embed_tokens', 'model.layers.0.self_attn.q_proj', 'model.layers.0.mlp.down_proj'];

async function modelDir(dir: string, dtype: FloatDType): Promise<string> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'model.safetensors'), safetensorsFile(model(dtype)));
  await writeFile(join(dir, 'config.json'), JSON.stringify({ model_type: 'llama', hidden_size: 128, _name_or_path: 'x' }));
  await writeFile(join(dir, 'tokenizer.json'), '{"version": "1.0"}');
  await writeFile(join(dir, 'tokenizer_config.json'), '{}');
  await writeFile(join(dir, 'notes.bin'), 'not copied');
  return dir;
}

/**
 * |w − ŵ| ≤ |scale of its group| (clipped far ends, docs/formats/mlx.md), plus the BF16 casts of
 * scale (q·|s − cast(s)| ≤ (2^bits − 1)·2⁻⁹·|s|) and output (an ulp of w).
 */
function checkBound(orig: Float32Array, back: Float32Array, scales: Float32Array, cols: number, groupSize: number, dtype: FloatDType, bits = 4, extraScales = 0): number {
  const groups = cols / groupSize;
  let worst = 0;
  for (let i = 0; i < orig.length; i++) {
    const s = Math.abs(scales[Math.floor(i / cols) * groups + Math.floor((i % cols) / groupSize)]!);
    const slack = (dtype === 'F32' ? 1e-6 * s + 1e-9 : ((2 ** bits - 1) * 2 ** -9 + 1e-3) * s + Math.abs(orig[i]!) * 2 ** -7) + extraScales * s;
    const err = Math.abs(orig[i]! - back[i]!);
    expect(err, `element ${i}`).toBeLessThanOrEqual(s + slack);
    worst = Math.max(worst, err / s);
  }
  return worst;
}

describe('quantize → dequantize through the CLI', () => {
  for (const dtype of ['F32', 'BF16'] as const) {
    it(`${dtype} model directory: config, tokenizer files, names, shapes and the error bound`, async () => {
      const root = await tempDir();
      const src = await modelDir(join(root, 'src'), dtype);
      const q = join(root, 'q');
      const r1 = await tensorport('quantize', src, `${q}/`, '--bits', '4', '--group-size', '64');
      expect(r1.stderr).toBe('');
      expect(r1.code).toBe(0);
      expect(r1.stdout).toContain('quantized 3 layers at 4 bits/group 64 (affine)');
      expect(await listDir(q)).toEqual(['config.json', 'model.safetensors', 'model.safetensors.index.json', 'tokenizer.json', 'tokenizer_config.json']);
      const config = JSON.parse(await readFile(join(q, 'config.json'), 'utf8'));
      expect(config.quantization).toEqual({ group_size: 64, bits: 4, mode: 'affine' });
      expect(config.quantization_config).toEqual(config.quantization);
      expect(config.model_type).toBe('llama');
      expect(config._name_or_path).toBeUndefined();
      expect(await readFile(join(q, 'tokenizer.json'), 'utf8')).toBe('{"version": "1.0"}');

      const qt = await tensorDigests(q);
      for (const l of QUANTIZED) {
        expect(qt.get(`${l}.weight`)!.dtype).toBe('U32');
        expect(qt.get(`${l}.scales`)!.dtype).toBe(dtype);
        expect(qt.get(`${l}.biases`)!.dtype).toBe(dtype);
      }
      expect(qt.get('model.layers.0.self_attn.q_proj.bias')!.dtype).toBe(dtype);

      const back = join(root, 'back');
      const r2 = await tensorport('dequantize', q, `${back}/`);
      expect(r2.code).toBe(0);
      expect(r2.stdout).toContain('dequantized 3 layers at 4 bits/group 64 (affine)');
      const backConfig = JSON.parse(await readFile(join(back, 'config.json'), 'utf8'));
      expect(backConfig).toEqual({ hidden_size: 128, model_type: 'llama' });

      const orig = await tensorDigests(join(src, 'model.safetensors'));
      const got = await tensorDigests(back);
      expect([...got.keys()].sort()).toEqual([...orig.keys()].sort());
      let worst = 0;
      for (const [name, o] of orig) {
        const g = got.get(name)!;
        expect(g.dtype, name).toBe(dtype);
        expect(g.shape, name).toEqual(o.shape);
        const layer = QUANTIZED.find((l) => `${l}.weight` === name);
        if (!layer) {
          expect(g.sha256, `${name} is copied unchanged`).toBe(o.sha256);
          continue;
        }
        const scales = decodeFloats(qt.get(`${layer}.scales`)!.bytes, dtype);
        worst = Math.max(worst, checkBound(decodeFloats(o.bytes, dtype), decodeFloats(g.bytes, dtype), scales, o.shape[1]!, 64, dtype));
      }
      // Rounding to the nearest level: most errors are well under one scale.
      expect(worst).toBeGreaterThan(0.3);
    });
  }

  it('a single file with --dtype f32, --rounding cpu and 8 bits/group 32', async () => {
    const root = await tempDir();
    const src = join(root, 'm.safetensors');
    await writeFile(src, safetensorsFile(model('BF16')));
    const q = join(root, 'q.safetensors');
    await ok('quantize', src, q, '--bits', '8', '--group-size', '32', '--rounding', 'cpu');
    const back = join(root, 'back.safetensors');
    const r = await tensorport('dequantize', q, back, '--dtype', 'f32');
    expect(r.code).toBe(0);
    const back16 = join(root, 'back16.safetensors');
    expect((await tensorport('dequantize', q, back16)).code).toBe(0);
    const got = await tensorDigests(back);
    const got16 = await tensorDigests(back16);
    const orig = await tensorDigests(src);
    const qt = await tensorDigests(q);
    for (const l of QUANTIZED) {
      const o = orig.get(`${l}.weight`)!;
      const g = got.get(`${l}.weight`)!;
      expect(g.dtype).toBe('F32');
      // MLX computes in the scales' dtype (BF16) and only then casts: the F32 output is the BF16 one, widened.
      expect(Array.from(decodeFloats(g.bytes, 'F32'))).toEqual(Array.from(decodeFloats(got16.get(`${l}.weight`)!.bytes, 'BF16')));
      // Both BF16 roundings (q·s, then + b) add up to an ulp of q·s ≤ (2^8 − 1)·|s|.
      checkBound(decodeFloats(o.bytes, 'BF16'), decodeFloats(g.bytes, 'F32'), decodeFloats(qt.get(`${l}.scales`)!.bytes, 'BF16'), o.shape[1]!, 32, 'BF16', 8, 255 * 2 ** -8);
    }
  });
});

describe('repack', () => {
  let root: string;
  let q: string;
  beforeAll(async () => {
    root = await tempDir();
    const src = await modelDir(join(root, 'src'), 'F32');
    q = join(root, 'q');
    await ok('quantize', src, `${q}/`);
  });

  it('lossless (4/64 → 8/32): same dequantized bytes, report all lossless, --json pure', async () => {
    const r8 = join(root, 'r8');
    const r = await tensorport('repack', q, `${r8}/`, '--bits', '8', '--group-size', '32', '--json');
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    const json = JSON.parse(r.stdout);
    expect(json.report).toHaveLength(3);
    for (const e of json.report) expect(e).toMatchObject({ from: { bits: 4, groupSize: 64 }, to: { bits: 8, groupSize: 32 }, lossless: true, maxAbsError: 0 });
    expect(json.quantization.map((l: { bits: number; groupSize: number }) => [l.bits, l.groupSize])).toEqual([[8, 32], [8, 32], [8, 32]]);
    expect(JSON.parse(await readFile(join(r8, 'config.json'), 'utf8')).quantization).toEqual({ group_size: 32, bits: 8, mode: 'affine' });

    const a = join(root, 'a.safetensors');
    const b = join(root, 'b.safetensors');
    await ok('dequantize', q, a);
    await ok('dequantize', r8, b);
    const da = await tensorDigests(a);
    const db = await tensorDigests(b);
    for (const [name, t] of da) expect(db.get(name)!.sha256, name).toBe(t.sha256);
  });

  it('lossy (4/64 → 2/64): prints the max abs error per layer, and it is the real one', async () => {
    const r2 = join(root, 'r2.safetensors');
    const r = await tensorport('repack', q, r2, '--bits', '2', '--group-size', '64');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('0 lossless, 3 re-quantized');
    const rows = r.stdout.split('\n').filter((line) => QUANTIZED.some((l) => line.startsWith(`${l} `)));
    expect(rows).toHaveLength(3);
    const printed = new Map(rows.map((line) => [line.split(/\s+/)[0]!, Number(line.split(/\s+/).pop())]));

    const a = join(root, 'lossy-a.safetensors');
    const b = join(root, 'lossy-b.safetensors');
    await ok('dequantize', q, a);
    await ok('dequantize', r2, b);
    const da = await tensorDigests(a);
    const db = await tensorDigests(b);
    for (const l of QUANTIZED) {
      const x = decodeFloats(da.get(`${l}.weight`)!.bytes, 'F32');
      const y = decodeFloats(db.get(`${l}.weight`)!.bytes, 'F32');
      let max = 0;
      for (let i = 0; i < x.length; i++) max = Math.max(max, Math.abs(x[i]! - y[i]!));
      expect(max).toBeGreaterThan(0);
      expect(printed.get(l)).toBeCloseTo(max, 5);
    }
  });
});

describe('refusals (exit 1, nothing written)', () => {
  /** 16 words and 4 scales per row fit 4 bits/group 32 (128 columns) and 2 bits/group 64 (256). */
  async function ambiguous(dir: string): Promise<string> {
    const words = new Uint8Array(8 * 16 * 4).map((_, i) => (i * 37) & 0xff);
    const side = encodeFloats(new Float32Array(8 * 4).fill(0.01), 'F32');
    const path = join(dir, 'amb.safetensors');
    await writeFile(path, safetensorsFile({ 'l.weight': { dtype: 'U32', shape: [8, 16], data: words }, 'l.scales': { dtype: 'F32', shape: [8, 4], data: side }, 'l.biases': { dtype: 'F32', shape: [8, 4], data: side } }));
    return path;
  }

  it('ambiguous shapes: a clear message naming the fits and the options; settled by --bits/--group-size', async () => {
    const dir = await tempDir();
    const amb = await ambiguous(dir);
    const out = join(dir, 'out.safetensors');
    const r = await tensorport('dequantize', amb, out);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('MlxAmbiguousQuantization');
    expect(r.stderr).toContain('4 bits/group 32');
    expect(r.stderr).toContain('2 bits/group 64');
    expect(r.stderr).toContain('pass --bits and --group-size');
    expect(await listDir(dir)).toEqual(['amb.safetensors']);

    const ok = await tensorport('dequantize', amb, out, '--bits', '2', '--group-size', '64');
    expect(ok.code).toBe(0);
    expect((await tensorDigests(out)).get('l.weight')).toMatchObject({ dtype: 'F32', shape: [8, 256] });

    // inspect still works, and says why it lists no layers.
    const i = await tensorport('inspect', amb, '--json');
    expect(i.code).toBe(0);
    const report = JSON.parse(i.stdout);
    expect(report.quantization).toBeUndefined();
    expect(report.warnings.map((w: { code: string }) => w.code)).toContain('MlxAmbiguousQuantization');
  });

  it('existing outputs without --force, the input directory as output, unknown bits, already quantized input', async () => {
    const root = await tempDir();
    const src = await modelDir(join(root, 'src'), 'F32');
    const q = join(root, 'q');
    await ok('quantize', src, `${q}/`);
    const before = await fileSha256(join(q, 'model.safetensors'));

    const again = await tensorport('quantize', src, `${q}/`, '--bits', '8');
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('OutputExists');
    expect(await fileSha256(join(q, 'model.safetensors'))).toBe(before);
    await ok('quantize', src, `${q}/`, '--bits', '8', '--force');
    expect(await fileSha256(join(q, 'model.safetensors'))).not.toBe(before);

    const same = await tensorport('dequantize', q, q, '--force');
    expect(same.code).toBe(1);
    expect(same.stderr).toContain('SameInputOutput');

    const sameFile = await tensorport('quantize', join(src, 'model.safetensors'), join(src, 'model.safetensors'), '--force');
    expect(sameFile.code).toBe(1);
    expect(sameFile.stderr).toContain('SameInputOutput');

    const bits = await tensorport('quantize', src, join(root, 'x.safetensors'), '--bits', '7');
    expect(bits.code).toBe(2);
    expect(bits.stderr).toContain('bits must be one of 2, 3, 4, 5, 6, 8');

    const twice = await tensorport('quantize', q, join(root, 'y.safetensors'));
    expect(twice.code).toBe(1);
    expect(twice.stderr).toContain('already quantized; repack');
    expect(await listDir(root)).toEqual(['q', 'src']);
    expect((await stat(join(src, 'model.safetensors'))).isFile()).toBe(true);
  });
});

describe('hostile and stale inputs', () => {
  it('mismatched scales, a broken config.json and a truncated file: exit 1 with the code, nothing written', async () => {
    const dir = await tempDir();
    const words = new Uint8Array(8 * 8 * 4);
    const side = (rows: number, cols: number) => encodeFloats(new Float32Array(rows * cols).fill(0.01), 'F32');
    const bad = join(dir, 'bad.safetensors');
    await writeFile(bad, safetensorsFile({ 'l.weight': { dtype: 'U32', shape: [8, 8], data: words }, 'l.scales': { dtype: 'F32', shape: [4, 1], data: side(4, 1) }, 'l.biases': { dtype: 'F32', shape: [8, 1], data: side(8, 1) } }));
    const r1 = await tensorport('dequantize', bad, join(dir, 'o1.safetensors'), '--bits', '4', '--group-size', '64');
    expect(r1.code).toBe(1);
    expect(r1.stderr).toContain('MlxInvalidQuantization');

    const model = join(dir, 'm');
    await modelDir(model, 'F32');
    await writeFile(join(model, 'config.json'), '{"quantization": ');
    const r2 = await tensorport('quantize', model, join(dir, 'o2/'));
    expect(r2.code).toBe(1);
    expect(r2.stderr).toContain('MlxInvalidConfig');

    const whole = safetensorsFile({ 'a.weight': { dtype: 'F32', shape: [2, 64], data: new Uint8Array(512) } });
    const cut = join(dir, 'cut.safetensors');
    await writeFile(cut, whole.subarray(0, whole.byteLength - 7));
    const r3 = await tensorport('quantize', cut, join(dir, 'o3.safetensors'));
    expect(r3.code).toBe(1);
    expect(r3.stderr).toMatch(/^tensorport: \w+: /);
    expect(await listDir(dir)).toEqual(['bad.safetensors', 'cut.safetensors', 'm']);
  });

  it('old shards in the output directory: refused without --force, removed with it (mlx-lm would load them)', async () => {
    const root = await tempDir();
    const src = await modelDir(join(root, 'src'), 'F32');
    const out = join(root, 'out');
    await mkdir(out);
    await writeFile(join(out, 'model-00001-of-00002.safetensors'), 'old');
    const r = await tensorport('quantize', src, out);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('model-00001-of-00002.safetensors already exists and would be loaded');
    expect(await listDir(out)).toEqual(['model-00001-of-00002.safetensors']);
    await ok('quantize', src, out, '--force');
    expect(await listDir(out)).toEqual(['config.json', 'model.safetensors', 'model.safetensors.index.json', 'tokenizer.json', 'tokenizer_config.json']);
  });
});

describe('the mixed fixture (fixtures/mlx/tiny-mixed: per-module bits 2–8, group sizes 32–128, mxfp4, MoE stacks)', () => {
  const fixture = join(REPO, 'fixtures/mlx/tiny-mixed');

  it('dequantize gives the expected BF16 bits; repack to 8/32 is lossless for every layer', async () => {
    const expected = await tensorDigests(join(fixture, 'expected-bf16-bits.safetensors'));
    const root = await tempDir();
    const back = join(root, 'back');
    const r = await ok('dequantize', fixture, `${back}/`, '--json');
    const modes = new Set(JSON.parse(r.stdout).quantization.map((l: { mode: string }) => l.mode));
    expect(modes).toEqual(new Set(['affine', 'mxfp4']));
    const got = await tensorDigests(back);
    const compare = (d: Map<string, { dtype: string; sha256: string }>) => {
      expect([...d.keys()].sort()).toEqual([...expected.keys()].sort());
      for (const [name, e] of expected) expect(d.get(name)!.sha256, name).toBe(e.sha256);
    };
    compare(got);

    // The mxfp4 layer passes through: only config.json can say so, so a single file is refused.
    const file = await tensorport('repack', fixture, join(root, 'r8.safetensors'), '--bits', '8', '--group-size', '32');
    expect(file.code).toBe(2);
    expect(file.stderr).toContain('model.layers.0.mlp.experts_fp4 is mxfp4');
    expect(await listDir(root)).toEqual(['back']);

    const r8 = join(root, 'r8');
    const rep = JSON.parse((await ok('repack', fixture, `${r8}/`, '--bits', '8', '--group-size', '32', '--json')).stdout);
    expect(rep.report.length).toBeGreaterThan(3);
    for (const e of rep.report) expect(e).toMatchObject({ lossless: true, maxAbsError: 0 });
    const config = JSON.parse(await readFile(join(r8, 'config.json'), 'utf8'));
    expect(config.quantization).toMatchObject({ bits: 8, group_size: 32, mode: 'affine', 'model.norm': false, 'model.layers.0.mlp.experts_fp4': { mode: 'mxfp4', bits: 4, group_size: 32 } });
    const again = join(root, 'again.safetensors');
    await ok('dequantize', r8, again, '--dtype', 'bf16');
    compare(await tensorDigests(again));
  });
});

describe('inspect and npz input', () => {
  it('inspect lists each quantized layer (table and --json)', async () => {
    const root = await tempDir();
    const src = await modelDir(join(root, 'src'), 'BF16');
    const q = join(root, 'q');
    await ok('quantize', src, `${q}/`, '--bits', '3', '--group-size', '32');
    const json = await tensorport('inspect', q, '--json');
    expect(json.code).toBe(0);
    const layers = JSON.parse(json.stdout).quantization as { layer: string }[];
    expect([...layers].sort((a, b) => a.layer.localeCompare(b.layer))).toEqual(QUANTIZED.map((layer) => ({ layer, bits: 3, groupSize: 32, mode: 'affine' })).sort((a, b) => a.layer.localeCompare(b.layer)));
    const text = await tensorport('inspect', q);
    expect(text.stdout).toContain('quantized layers: 3');
    expect(text.stdout).toMatch(/model\.layers\.0\.mlp\.down_proj\s+3\s+32\s+affine/);
  });

  it('an MLX .npz (BF16 stored as <V2) quantizes like the same safetensors', async () => {
    const root = await tempDir();
    const tensors = Object.entries(model('BF16')).map(([name, t]) => ({
      name,
      dtype: 'BF16' as const,
      shape: t.shape,
      byteLength: t.data.byteLength,
      async *chunks() {
        yield t.data;
      },
    }));
    const npz = join(root, 'weights.npz');
    const sink = await FileSink.create(npz);
    await writeNpz(tensors, sink);
    const st = join(root, 'm.safetensors');
    await writeFile(st, safetensorsFile(model('BF16')));
    const a = join(root, 'a.safetensors');
    const b = join(root, 'b.safetensors');
    const r = await tensorport('quantize', npz, a);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    await ok('quantize', st, b);
    const da = await tensorDigests(a);
    const db = await tensorDigests(b);
    expect([...da.keys()].sort()).toEqual([...db.keys()].sort());
    for (const [name, t] of db) expect(da.get(name)!.sha256, name).toBe(t.sha256);
  });
});

const py = await requirePython(['safetensors', 'numpy']);
describe.skipIf(!py)('Python safetensors loads quantize → dequantize output', () => {
  for (const dtype of ['F32', 'BF16'] as const) {
    it(`${dtype}: original names, shapes and dtypes`, async () => {
      const root = await tempDir();
      const src = await modelDir(join(root, 'src'), dtype);
      const q = join(root, 'q');
      const back = join(root, 'back');
      await ok('quantize', src, `${q}/`);
      await ok('dequantize', q, `${back}/`);
      // numpy has no bfloat16: names, shapes and dtypes come from get_slice; F32 values are read too.
      const out = await runPython(
        py!.exe,
        `
import json, sys
from safetensors import safe_open
res = {}
with safe_open(sys.argv[1], framework="numpy") as f:
    for k in f.keys():
        s = f.get_slice(k)
        res[k] = {"dtype": s.get_dtype(), "shape": list(s.get_shape())}
        if s.get_dtype() == "F32":
            res[k]["sum"] = float(abs(f.get_tensor(k)).sum())
print(json.dumps(res))
`,
        { args: [join(back, 'model.safetensors')] },
      );
      const got = JSON.parse(out) as Record<string, { dtype: string; shape: number[]; sum?: number }>;
      expect(Object.keys(got).sort()).toEqual(Object.keys(LAYOUT).sort());
      for (const [name, spec] of Object.entries(LAYOUT)) {
        expect(got[name], name).toMatchObject({ dtype, shape: spec.shape });
        if (dtype === 'F32') expect(got[name]!.sum!, name).toBeGreaterThan(0);
      }
    });
  }
});
