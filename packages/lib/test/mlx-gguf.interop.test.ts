import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BytesSource, openSafetensors, type Finding, type TensorDescriptor } from '@tensorport/core';
import { hfToGgufName, permuteQK } from '@tensorport/gguf';
import { decodeFloats, dequantizeAffine, dequantizeCheckpoint, dequantizeFp, findQuantizedLayers, wordsOf, type FloatDType, type QuantizedLayer } from '@tensorport/mlx';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { bytesOf } from '../../npz/test/helpers.ts';
import { convertPath } from '../src/node/index.ts';

const py = await requirePython(['gguf', 'numpy', 'safetensors']);

const REPO = join(import.meta.dirname, '../../..');
const TOY = join(REPO, 'fixtures/mlx/tiny-mixed');
const LLAMA = join(REPO, 'fixtures/gguf/tiny-llama');

// An mlx-lm style 4-bit llama (F16 scales and biases) from the tiny llama fixture, quantized by
// bench/mlx_numpy.py (the numpy emulation of MLX's kernels: MLX is not installable here), with
// per-layer overrides for 2, 3, 5, 6 and 8 bits and groups of 32.
const MAKE = `
import json, os, sys
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(sys.argv[1], 'bench'))
import numpy as np
from safetensors.numpy import load_file, save_file
from mlx_numpy import quantize, from_f32
src, out = sys.argv[2], sys.argv[3]
DT = 'F16'
over = {'model.layers.0.mlp.down_proj': (8, 32), 'model.layers.1.mlp.down_proj': (5, 32),
        'model.layers.0.self_attn.o_proj': (6, 64), 'model.layers.1.self_attn.o_proj': (2, 64),
        'model.layers.1.self_attn.v_proj': (3, 32)}
q = {'group_size': 64, 'bits': 4, 'mode': 'affine'}
tensors = {}
for name, a in load_file(os.path.join(src, 'model.safetensors')).items():
    if a.ndim != 2:
        tensors[name] = a.astype(np.float16)
        continue
    path = name[:-len('.weight')]
    bits, gs = over.get(path, (4, 64))
    words, s, b = quantize(a.reshape(-1).astype(np.float32), gs, bits, 'gpu', DT)
    rows = a.shape[0]
    tensors[name] = words.astype('<u4').reshape(rows, -1)
    tensors[path + '.scales'] = np.frombuffer(from_f32(s, DT), '<f2').reshape(rows, -1)
    tensors[path + '.biases'] = np.frombuffer(from_f32(b, DT), '<f2').reshape(rows, -1)
    if (bits, gs) != (4, 64): q[path] = {'group_size': gs, 'bits': bits}
cfg = json.load(open(os.path.join(src, 'config.json')))
cfg['quantization'] = q
cfg['quantization_config'] = q
cfg['dtype'] = 'float16'
os.makedirs(out, exist_ok=True)
save_file(tensors, os.path.join(out, 'model.safetensors'), metadata={'format': 'mlx'})
json.dump(cfg, open(os.path.join(out, 'config.json'), 'w'), indent=2)
`;

// Every tensor of each GGUF, dequantized by gguf-py to float32, appended to one file per GGUF.
const READ = `
import json, sys
import numpy as np
from gguf import GGUFReader, quants
res = {}
for path in sys.argv[1:]:
    r = GGUFReader(path)
    arch = r.fields.get('general.architecture')
    out, index, off = open(path + '.f32', 'wb'), {}, 0
    for t in r.tensors:
        v = np.ascontiguousarray(np.asarray(quants.dequantize(t.data, t.tensor_type), dtype=np.float32)).reshape(-1)
        out.write(v.tobytes())
        index[t.name] = {'type': t.tensor_type.name, 'offset': off, 'count': int(v.size)}
        off += v.nbytes
    out.close()
    res[path] = {'tensors': index, 'fileType': int(r.fields['general.file_type'].parts[-1][0]) if 'general.file_type' in r.fields else None}
print(json.dumps(res))
`;

// Independent of our code: the MLX f32 reconstruction by the numpy emulation (s·q + b), q/k rows
// permuted as convert_hf_to_gguf.py does, against gguf-py's dequantization of the llama GGUF.
const NUMPY_CHECK = `
import json, os, sys
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(sys.argv[1], 'bench'))
import numpy as np
from safetensors.numpy import load_file
from mlx_numpy import unpack
from gguf import GGUFReader, quants
model, path = sys.argv[2], sys.argv[3]
q = json.load(open(os.path.join(model, 'config.json')))['quantization']
raw = load_file(os.path.join(model, 'model.safetensors'))
def permute(w, n_head):
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)
names = {'model.embed_tokens': 'token_embd', 'lm_head': 'output'}
for i in range(2):
    for hf, gg in [('self_attn.q_proj', 'attn_q'), ('self_attn.k_proj', 'attn_k'), ('self_attn.v_proj', 'attn_v'), ('self_attn.o_proj', 'attn_output'),
                   ('mlp.gate_proj', 'ffn_gate'), ('mlp.up_proj', 'ffn_up'), ('mlp.down_proj', 'ffn_down')]:
        names[f'model.layers.{i}.{hf}'] = f'blk.{i}.{gg}'
got = {t.name: t for t in GGUFReader(path).tensors}
res = {}
for p, g in names.items():
    a = raw[p + '.weight']
    bits, gs = (q[p]['bits'], q[p]['group_size']) if p in q else (q['bits'], q['group_size'])
    s = raw[p + '.scales'].astype(np.float32)
    b = raw[p + '.biases'].astype(np.float32)
    rows, cols = a.shape[0], a.shape[1] * 32 // bits
    codes = unpack(a.reshape(-1), bits, rows * cols).astype(np.float32).reshape(rows, -1, gs)
    ref = (codes * s[:, :, None] + b[:, :, None]).reshape(rows, cols)
    if g.endswith('attn_q'): ref = permute(ref, 4)
    if g.endswith('attn_k'): ref = permute(ref, 2)
    t = got[g + '.weight']
    v = np.asarray(quants.dequantize(t.data, t.tensor_type), dtype=np.float32).reshape(rows, cols)
    res[p] = {'bits': bits, 'type': t.tensor_type.name, 'equal': bool(np.array_equal(v, ref)), 'maxAbs': float(np.abs(v - ref).max())}
print(json.dumps(res))
`;

interface Read { tensors: Record<string, { type: string; offset: number; count: number }>; fileType: number | null }

let dir = '';
let model = '';
const ggufs: Record<string, { path: string; warnings: Finding[] }> = {};
let read: Record<string, Read> = {};
const values = new Map<string, Uint8Array>();

beforeAll(async () => {
  if (!py) return;
  dir = await mkdtemp(join(tmpdir(), 'tensorport-mlx-gguf-'));
  model = join(dir, 'llama-mlx');
  await runPython(py.exe, MAKE, { args: [REPO, LLAMA, model] });
  const runs: Array<[string, string, string | undefined]> = [['toy', TOY, undefined], ['llama', model, undefined], ['llamaQ5_1', model, 'Q5_1'], ['llamaF16', model, 'F16']];
  for (const [key, input, type] of runs) {
    const path = join(dir, `${key}.gguf`);
    const r = await convertPath({ input: input + '/', output: path, fsync: false, ...(type ? { gguf: { type } } : {}) });
    ggufs[key] = { path, warnings: r.warnings };
  }
  read = JSON.parse(await runPython(py.exe, READ, { args: Object.values(ggufs).map((g) => g.path) })) as Record<string, Read>;
  for (const g of Object.values(ggufs)) values.set(g.path, new Uint8Array(await readFile(g.path + '.f32')));
}, 60_000);
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function openInput(path: string): Promise<{ tensors: TensorDescriptor[]; layers: QuantizedLayer[]; config: Record<string, unknown> }> {
  const st = await openSafetensors(new BytesSource(new Uint8Array(await readFile(join(path, 'model.safetensors')))));
  const config = JSON.parse(await readFile(join(path, 'config.json'), 'utf8')) as Record<string, unknown>;
  return { tensors: [...st.tensors], layers: findQuantizedLayers(st, { config }), config };
}

function mem(name: string, dtype: TensorDescriptor['dtype'], shape: readonly number[], bytes: Uint8Array): TensorDescriptor {
  return { name, dtype, shape: [...shape], byteLength: bytes.byteLength, chunks: async function* () { yield bytes; } };
}

/** MLX's f32 reconstruction of one layer (s·q + b in f32; mxfp4 codes times 2^e), rows as the GGUF holds them. */
async function mlxF32(layer: QuantizedLayer, byName: Map<string, TensorDescriptor>, heads?: number): Promise<Float32Array> {
  const words = wordsOf(await bytesOf(byName.get(layer.weight)!));
  const sBytes = await bytesOf(byName.get(layer.scales)!);
  let y: Float32Array;
  if (layer.mode === 'mxfp4') y = dequantizeFp(words, sBytes, { mode: 'mxfp4', dtype: 'F32' });
  else {
    const sdt = layer.scaleDtype as FloatDType;
    y = dequantizeAffine(words, decodeFloats(sBytes, sdt), decodeFloats(await bytesOf(byName.get(layer.biases!)!), sdt), { bits: layer.bits, groupSize: layer.groupSize, dtype: 'F32' });
  }
  return heads === undefined ? y : permuted(y, layer.cols, heads);
}

async function permuted(y: Float32Array, cols: number, heads: number): Promise<Float32Array> {
  const d = permuteQK(mem('w', 'F32', [y.length / cols, cols], new Uint8Array(y.buffer)), heads, cols * 4, true);
  const b = await bytesOf(d);
  return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
}

function ggufValues(key: string, name: string): { type: string; v: Float32Array } {
  const g = ggufs[key]!;
  const t = read[g.path]!.tensors[name];
  expect(t, `${key}: ${name}`).toBeDefined();
  const bytes = values.get(g.path)!;
  return { type: t!.type, v: new Float32Array(bytes.buffer, bytes.byteOffset + t!.offset, t!.count) };
}

const headsOf = (gguf: string): number | undefined => (gguf.includes('attn_q.') ? 4 : gguf.includes('attn_k.') ? 2 : undefined);
const maxAbs = (a: Float32Array, b: Float32Array): number => a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i]!)), 0);
const same = (a: Float32Array, b: Float32Array): boolean => Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));

/** The error each re-quantized layer's warning states, by tensor. */
function reportedErrors(warnings: readonly Finding[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const w of warnings) {
    if (w.code !== 'MlxBlocksRequantized') continue;
    const m = /max \|GGUF − MLX f32\| = ([0-9.e+-]+)$/.exec(w.message);
    expect(m, w.message).not.toBeNull();
    out.set(w.tensor!, Number(m![1]));
  }
  return out;
}

/** Checks every MLX layer of `input` in GGUF `key`: the expected type, bit for bit when lossless, else the reported error. */
async function checkLayers(key: string, input: string, llama: boolean, expectType: (l: QuantizedLayer) => [string, boolean]): Promise<string[]> {
  const { tensors, layers } = await openInput(input);
  const byName = new Map(tensors.map((t) => [t.name, t]));
  const errors = reportedErrors(ggufs[key]!.warnings);
  const seen: string[] = [];
  for (const l of layers) {
    const name = llama ? hfToGgufName(l.weight)! : l.weight;
    const { type, v } = ggufValues(key, name);
    const ref = await mlxF32(l, byName, llama ? headsOf(name) : undefined);
    const [want, lossless] = expectType(l);
    expect(type, name).toBe(want);
    expect(v.length).toBe(ref.length);
    seen.push(`${l.mode === 'affine' ? `affine${l.bits}` : l.mode}:${type}:${lossless ? 'exact' : 'requantized'}`);
    if (lossless) {
      // ggml's f32 d·q + m is MLX's f32 s·q + b; MXFP4 gives +0 where MLX's code 8 is −0.
      if (l.mode === 'mxfp4') expect(Array.from(v, (x) => x + 0)).toEqual(Array.from(ref, (x) => x + 0));
      else expect(same(v, ref), name).toBe(true);
      expect(errors.has(l.weight), name).toBe(false);
    } else {
      const err = maxAbs(v, ref);
      expect(err, name).toBeGreaterThan(0);
      expect(errors.get(l.weight), name).toBe(err);
    }
  }
  return seen.sort();
}

const defaultType = (l: QuantizedLayer): [string, boolean] =>
  l.mode === 'mxfp4' ? ['MXFP4', true] : l.bits <= 4 ? ['Q4_1', true] : l.bits === 5 ? ['Q5_1', true] : ['Q8_0', false];

describe.skipIf(!py)('MLX-quantized models → GGUF blocks, read back with gguf-py', () => {
  it('tiny-mixed (toy names, BF16 scales): ≤ 4 bits Q4_1, 5 bits Q5_1, mxfp4 MXFP4 bit for bit; 6 and 8 bits Q8_0 within the reported error', async () => {
    const seen = await checkLayers('toy', TOY, false, defaultType);
    expect(seen).toEqual([
      'affine2:Q4_1:exact', 'affine3:Q4_1:exact', 'affine4:Q4_1:exact', 'affine4:Q4_1:exact', 'affine4:Q4_1:exact',
      'affine5:Q5_1:exact', 'affine6:Q8_0:requantized', 'affine8:Q8_0:requantized', 'mxfp4:MXFP4:exact',
    ]);
    const t = read[ggufs.toy!.path]!.tensors;
    // scales and biases are folded into the blocks; the layer's own float bias stays
    expect(Object.keys(t).some((n) => n.endsWith('.scales') || n.endsWith('.biases'))).toBe(false);
    expect(t['model.layers.0.self_attn.q_proj.bias']?.type).toBe('BF16');
    expect(ggufs.toy!.warnings.find((w) => w.code === 'MlxBlocksKept')?.message).toMatch(/^7 MLX-quantized layer\(s\) .*5 Q4_1, 1 Q5_1, 1 MXFP4/);
  });

  it('a 4-bit llama (F16 scales): llama names, q/k rows permuted, the file type of most bytes, norms F32', async () => {
    const seen = await checkLayers('llama', model, true, defaultType);
    expect(seen.filter((s) => s.endsWith("exact")).length).toBe(14);
    expect(seen.filter((s) => !s.endsWith('exact'))).toEqual(['affine6:Q8_0:requantized', 'affine8:Q8_0:requantized']);
    const r = read[ggufs.llama!.path]!;
    expect(r.fileType).toBe(3); // LLAMA_FTYPE_MOSTLY_Q4_1
    expect(r.tensors['blk.0.attn_norm.weight']?.type).toBe('F32');
    expect(Object.keys(r.tensors).length).toBe(21);
    const numpy = JSON.parse(await runPython(py!.exe, NUMPY_CHECK, { args: [REPO, model, ggufs.llama!.path] })) as Record<string, { bits: number; type: string; equal: boolean; maxAbs: number }>;
    const errors = reportedErrors(ggufs.llama!.warnings);
    expect(Object.keys(numpy).length).toBe(16);
    for (const [path, c] of Object.entries(numpy)) {
      if (c.bits === 6 || c.bits === 8) expect(c.maxAbs, path).toBe(errors.get(`${path}.weight`));
      else expect(c.equal, path).toBe(true);
    }
  });

  it('--gguf-type Q5_1: layers of ≤ 5 bits kept exactly in Q5_1, the others re-quantized to it with their error', async () => {
    const seen = await checkLayers('llamaQ5_1', model, true, (l) => ['Q5_1', l.bits <= 5]);
    expect(seen.filter((s) => !s.endsWith('exact'))).toEqual(['affine6:Q5_1:requantized', 'affine8:Q5_1:requantized']);
  });

  it('--gguf-type F16: every layer dequantized as MLX computes it (F16 arithmetic), equal to the mlx package dequantize', async () => {
    const { tensors, layers, config } = await openInput(model);
    const deq = new Map(dequantizeCheckpoint({ tensors, metadata: null }, { config, dtype: 'F16' }).tensors.map((t) => [t.name, t]));
    for (const l of layers) {
      const name = hfToGgufName(l.weight)!;
      const { type, v } = ggufValues('llamaF16', name);
      expect(type, name).toBe('F16');
      let ref = decodeFloats(await bytesOf(deq.get(l.weight)!), 'F16');
      const heads = headsOf(name);
      if (heads !== undefined) ref = await permuted(ref, l.cols, heads);
      expect(same(v, ref), name).toBe(true);
    }
    expect(ggufs.llamaF16!.warnings.map((w) => w.code)).toEqual(['MlxDequantized']);
  });
});
