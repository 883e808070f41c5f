/**
 * tensorport convert with GGUF on either side, through the built CLI, checked by the real tools:
 * gguf-py (GGUFReader, quants) and safetensors/torch/transformers.
 */
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { REPO, tempDir, tensorport } from './helpers.ts';

const GGUF = join(REPO, 'fixtures/gguf');
const py = await requirePython(['gguf', 'numpy', 'torch', 'safetensors']);
const hf = await requirePython(['gguf', 'numpy', 'torch', 'safetensors', 'transformers']);

const json = (s: string): any => JSON.parse(s); // eslint-disable-line @typescript-eslint/no-explicit-any

describe.skipIf(!py)('GGUF → safetensors', () => {
  it('keeps stored floats, dequantizes blocks to F32 equal to gguf-py, and --keep-blocks keeps the raw bytes', async () => {
    const dir = await tempDir();
    const out = join(dir, 'kitchen.safetensors');
    const r = await tensorport('convert', join(GGUF, 'kitchen.gguf'), out, '--json');
    expect(r.code, r.stderr).toBe(0);
    expect(json(r.stdout)).toMatchObject({ from: 'gguf', to: 'safetensors', tensors: 7 });
    const raw = join(dir, 'raw.safetensors');
    expect((await tensorport('convert', join(GGUF, 'kitchen.gguf'), raw, '--keep-blocks')).code).toBe(0);
    const res = json(await runPython(py!.exe, `
import sys, json, numpy as np, torch
from gguf import GGUFReader, quants
from safetensors import safe_open
from safetensors.torch import load_file
r = GGUFReader(sys.argv[1])
got = load_file(sys.argv[2]); raw = load_file(sys.argv[3])
with safe_open(sys.argv[2], 'pt') as f: meta = f.metadata()
with safe_open(sys.argv[3], 'pt') as f: rawmeta = f.metadata()
res = {'dtypes': {k: str(v.dtype) for k, v in got.items()}, 'equal': {}, 'raw': {}, 'format': meta.get('format'), 'arch': meta.get('general.architecture'), 'rawType': rawmeta.get('gguf.type.d.q4_0')}
for t in r.tensors:
    want = (np.asarray(t.data) if t.tensor_type.name == 'I32' else quants.dequantize(t.data, t.tensor_type)).reshape([int(x) for x in reversed(t.shape)])
    g = got[t.name].to(torch.float64).numpy() if got[t.name].dtype != torch.int32 else got[t.name].numpy()
    res['equal'][t.name] = bool(np.array_equal(g, want.astype(g.dtype)))
    res['raw'][t.name] = bool(np.array_equal(raw[t.name].reshape(-1).view(torch.uint8).numpy(), np.asarray(t.data).reshape(-1).view(np.uint8)))
print(json.dumps(res))
`, { args: [join(GGUF, 'kitchen.gguf'), out, raw] }));
    expect(res.dtypes).toEqual({
      'a.f32': 'torch.float32', 'b.f16': 'torch.float16', 'c.bf16': 'torch.bfloat16', 'd.q4_0': 'torch.float32',
      'e.q4_k': 'torch.float32', 'f.i32': 'torch.int32', 'g.row': 'torch.float32',
    });
    expect(Object.values(res.equal).every(Boolean), JSON.stringify(res.equal)).toBe(true);
    expect(Object.values(res.raw).every(Boolean), JSON.stringify(res.raw)).toBe(true);
    expect(res.format).toBe('pt');
    expect(res.arch).toBe('llama');
    expect(res.rawType).toBe('Q4_0');
  });

  it('diff of a GGUF against its safetensors conversion is equal; --dtype f16 output is not', async () => {
    const dir = await tempDir();
    const out = join(dir, 'k.safetensors');
    expect((await tensorport('convert', join(GGUF, 'kitchen.gguf'), out)).code).toBe(0);
    const same = await tensorport('diff', join(GGUF, 'kitchen.gguf'), out, '--json');
    expect(same.code, same.stdout + same.stderr).toBe(0);
    expect(json(same.stdout)).toMatchObject({ equal: true, formats: ['gguf', 'safetensors'] });
    const f16 = join(dir, 'k16.safetensors');
    expect((await tensorport('convert', join(GGUF, 'kitchen.gguf'), f16, '--dtype', 'f16')).code).toBe(0);
    const other = await tensorport('diff', join(GGUF, 'kitchen.gguf'), f16, '--json');
    expect(other.code).toBe(1);
    expect(json(other.stdout).equal).toBe(false);
  });
});

describe.skipIf(!py)('safetensors → GGUF', () => {
  it('--gguf-type Q8_0 writes what gguf-py quantize gives; 1-D tensors stay F32; GGUFReader reads it', async () => {
    const dir = await tempDir();
    const src = join(dir, 'w.safetensors');
    await runPython(py!.exe, `
import sys, numpy as np
from safetensors.numpy import save_file
rng = np.random.default_rng(3)
save_file({'w': rng.standard_normal((4, 64)).astype(np.float32), 'b': rng.standard_normal(64).astype(np.float32)}, sys.argv[1], metadata={'note': 'x'})
`, { args: [src] });
    const out = join(dir, 'w.gguf');
    const r = await tensorport('convert', src, out, '--gguf-type', 'q8_0', '--verify');
    expect(r.code, r.stderr).toBe(0);
    const res = json(await runPython(py!.exe, `
import sys, json, numpy as np
from gguf import GGUFReader, quants, GGMLQuantizationType as T
from safetensors.numpy import load_file
src = load_file(sys.argv[1]); r = GGUFReader(sys.argv[2])
t = {x.name: x for x in r.tensors}
print(json.dumps({
  'types': {k: v.tensor_type.name for k, v in t.items()},
  'w': bool(np.array_equal(np.asarray(t['w'].data).reshape(-1), quants.quantize(src['w'], T.Q8_0).reshape(-1))),
  'b': bool(np.array_equal(np.asarray(t['b'].data), src['b'])),
  'note': r.fields['note'].contents(),
}))
`, { args: [src, out] }));
    expect(res).toEqual({ types: { w: 'Q8_0', b: 'F32' }, w: true, b: true, note: 'x' });
    const bad = await tensorport('convert', src, join(dir, 'x.gguf'), '--gguf-type', 'Q4_K');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--gguf-type.*Q8_0/);
  });
});

describe.skipIf(!hf)('tiny llama: directory → model.gguf → directory through the CLI', () => {
  it('gives transformers the same logits (F32), llama.cpp key types, and Q8_0 within its error', async () => {
    const dir = await tempDir();
    const model = join(dir, 'model');
    await cp(join(GGUF, 'tiny-llama'), model, { recursive: true });
    const gg = join(dir, 'model.gguf');
    const to = await tensorport('convert', model, gg, '--json');
    expect(to.code, to.stderr).toBe(0);
    const back = join(dir, 'back') + '/';
    const from = await tensorport('convert', gg, back, '--json');
    expect(from.code, from.stderr).toBe(0);
    expect(json(from.stdout).files.map((f: string) => f.split('/').pop()).sort()).toEqual(['config.json', 'model.safetensors']);
    const q8 = join(dir, 'q8.gguf');
    expect((await tensorport('convert', model, q8, '--gguf-type', 'Q8_0')).code).toBe(0);
    const q8back = join(dir, 'q8back') + '/';
    expect((await tensorport('convert', q8, q8back)).code).toBe(0);
    const res = json(await runPython(hf!.exe, `
import sys, json
class _NoVision:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('torchvision', 'PIL'): raise ImportError(name)
sys.meta_path.insert(0, _NoVision())
import numpy as np, torch
from transformers import LlamaForCausalLM
from gguf import GGUFReader
src, gg, back, q8back = sys.argv[1:5]
ids = torch.tensor([[1, 5, 9, 33, 2, 70, 95, 0, 12, 44, 3, 17]])
def logits(p):
    m = LlamaForCausalLM.from_pretrained(p, dtype=torch.float32)
    with torch.no_grad(): return m(ids).logits.numpy()
ref, got, q = logits(src), logits(back), logits(q8back)
r = GGUFReader(gg)
print(json.dumps({
  'equal': bool(np.array_equal(ref, got)),
  'q8MaxAbs': float(np.abs(q - ref).max()), 'maxAbsLogit': float(np.abs(ref).max()),
  'types': {f.name: f.types[0].name for f in r.fields.values() if f.name in ('general.architecture', 'llama.block_count', 'llama.attention.head_count_kv', 'llama.rope.freq_base', 'llama.attention.layer_norm_rms_epsilon')},
  'tensorTypes': sorted({t.tensor_type.name for t in r.tensors}),
}))
`, { args: [model, gg, back, q8back] }));
    expect(res.equal).toBe(true);
    expect(res.types).toEqual({
      'general.architecture': 'STRING', 'llama.block_count': 'UINT32', 'llama.attention.head_count_kv': 'UINT32',
      'llama.rope.freq_base': 'FLOAT32', 'llama.attention.layer_norm_rms_epsilon': 'FLOAT32',
    });
    expect(res.tensorTypes).toEqual(['F32']);
    expect(res.q8MaxAbs).toBeGreaterThan(0);
    expect(res.q8MaxAbs).toBeLessThan(0.05 * res.maxAbsLogit);
    const d = await tensorport('diff', gg, join(model, 'model.safetensors'), '--json');
    expect(d.code, d.stdout + d.stderr).toBe(0);
    expect(json(d.stdout).equal).toBe(true);
  }, 120_000);
});
