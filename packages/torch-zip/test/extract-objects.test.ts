import { readFileSync } from 'node:fs';
import { BytesSource } from '@tensorport/core';
import { describe, expect, it } from 'vitest';
import { openTorchCheckpoint, scanCheckpoint, TORCH_DTYPES, type TorchDtype } from '../src/index.ts';
import { allowedGlobals } from '../src/torch/allowlist.ts';
import { digest } from './helpers/digest.ts';
import { fileURLToPath } from 'node:url';

interface Tensor { name: string; dtype: string; shape: number[]; sha256: string }
interface Manifest { file: string; globals: string[]; unsafeGlobals: string[]; weightsOnly: string; select: string | null; tensors: Tensor[]; all?: Tensor[] }
const DIR = fileURLToPath(new URL('../../../fixtures/torch-objects/', import.meta.url));
const manifest = (file: string): Manifest => JSON.parse(readFileSync(`${DIR}${file}.manifest.json`, 'utf8')) as Manifest;
const source = (file: string) => new BytesSource(new Uint8Array(readFileSync(`${DIR}${file}`)), file);
const allowed = new Set(allowedGlobals());

/** Every tensor named `expected` has exactly the real loader's bytes (dtype, shape, sha256). */
async function expectTensors(c: Awaited<ReturnType<typeof openTorchCheckpoint>>, expected: Tensor[]): Promise<void> {
  const byName = new Map(c.tensors.map((t) => [t.name, t]));
  for (const e of expected) {
    const t = byName.get(e.name);
    expect(t, e.name).toBeDefined();
    expect(t!.dtype, e.name).toBe(TORCH_DTYPES[e.dtype as TorchDtype].safetensors);
    expect(t!.shape, e.name).toEqual(e.shape);
    expect(await digest(t!, 7), e.name).toBe(e.sha256);
  }
}

// Made by fixtures/torch-objects/generate.py with torch, torchvision, transformers, pytorch_lightning;
// the manifests hold what torch.load(weights_only=False) (+ state_dict() for modules) returned.
const FAMILIES = [
  'full-model.pt', 'full-model-p4.pt', 'torchvision-mobilenet.pt', 'transformers-bert.pt', 'adam.pt',
  'namespace-numpy.pt', 'deepspeed/global_step10/mp_rank_00_model_states.pt', 'lightning.ckpt',
];

describe('extraction mode on checkpoints that pickle foreign objects (fixtures/torch-objects)', () => {
  for (const file of FAMILIES) {
    const m = manifest(file);
    it(`${file}: the real loader's ${m.tensors.length} tensors, bit for bit, with --select ${m.select ?? '(none)'}`, async () => {
      const c = await openTorchCheckpoint(source(file), { allowObjects: true, keepAliases: true, ...(m.select ? { select: m.select } : {}) });
      expect(c.tensors.map((t) => t.name)).toEqual(m.tensors.map((t) => t.name));
      await expectTensors(c, m.tensors);
      // every global outside the allowlist is reported, with a count and where it was first seen
      const reported = new Set(c.objects!.globals.map((g) => g.name));
      for (const g of m.unsafeGlobals) expect(reported.has(g), g).toBe(true);
      for (const g of reported) expect(allowed.has(g), g).toBe(false);
    });
  }

  it('strict mode (the default) still refuses them, and scan still calls them unsafe', async () => {
    for (const file of FAMILIES.filter((f) => manifest(f).weightsOnly !== 'loads')) {
      await expect(openTorchCheckpoint(source(file)), file).rejects.toMatchObject({ code: 'PickleDisallowedGlobal' });
      const r = await scanCheckpoint(source(file));
      expect(r.verdict, file).toBe('unsafe');
    }
  });

  it('whole modules: tied and shared parameters are one storage under every state_dict name; default aliasing keeps one', async () => {
    const c = await openTorchCheckpoint(source('full-model.pt'), { allowObjects: true });
    expect(c.aliases['out.weight']).toBe('emb.weight');
    // heads.0 and shared are one Linear record: each pair is written once
    expect([c.aliases['shared.weight'], c.aliases['heads.0.weight']]).toContain(c.aliases['shared.weight'] ? 'heads.0.weight' : 'shared.weight');
    expect(Object.keys(c.aliases)).toHaveLength(3);
    expect(c.tensors.map((t) => t.name)).not.toContain('tmp'); // the non-persistent buffer
    expect(c.objects!.modules).toBe(1);
    expect(c.objects!.globals.find((g) => g.name === 'tpmodels.Net')).toMatchObject({ count: 1, firstPath: '' });
    expect(c.warnings.map((w) => w.message).join('\n')).toContain('tpmodels.Net: a class outside torch.nn');
  });

  it('--select picks a submodule of a whole-module pickle and a subtree of a Lightning checkpoint', async () => {
    const sub = await openTorchCheckpoint(source('full-model.pt'), { allowObjects: true, select: 'features' });
    expect(sub.tensors.map((t) => t.name)).toEqual(manifest('full-model.pt').tensors.map((t) => t.name).filter((n) => n.startsWith('features.')).map((n) => n.slice('features.'.length)));
    const m = manifest('lightning.ckpt');
    const all = await openTorchCheckpoint(source('lightning.ckpt'), { allowObjects: true, keepAliases: true });
    await expectTensors(all, m.all!);
    const hp = all.objects!.globals.find((g) => g.name === 'argparse.Namespace');
    expect(hp?.firstPath).toBe('hyper_parameters.ns');
  });

  it('numpy: arrays (C, Fortran, big-endian, 0-d, empty, bool) become tensors; scalars are report values', async () => {
    const m = JSON.parse(readFileSync(`${DIR}namespace-numpy.pt.manifest.json`, 'utf8')) as { numpyArrays: Record<string, { dtype: string; shape: number[]; sha256: string }> };
    const c = await openTorchCheckpoint(source('namespace-numpy.pt'), { allowObjects: true, select: 'meta' });
    expect(c.tensors.map((t) => t.name).sort()).toEqual(Object.keys(m.numpyArrays).sort());
    for (const t of c.tensors) {
      expect(t.shape).toEqual(m.numpyArrays[t.name]!.shape);
      expect(await digest(t, 3), t.name).toBe(m.numpyArrays[t.name]!.sha256);
    }
    const all = await openTorchCheckpoint(source('namespace-numpy.pt'), { allowObjects: true });
    expect(all.objects!.numpyScalars).toEqual([
      { path: 'extra_state.val_loss', dtype: '<f8', value: 0.25 },
      { path: 'extra_state.best_step', dtype: '<i8', value: -7 },
      { path: 'extra_state.flag', dtype: '|b1', value: true },
    ]);
  });

  it('numpy 1.x names (numpy.core.multiarray, written by numpy 1.24 + torch 1.13) decode the same way', async () => {
    const m = manifest('numpy1-arrays.pt');
    const c = await openTorchCheckpoint(source('numpy1-arrays.pt'), { allowObjects: true });
    expect(c.tensors.map((t) => t.name).sort()).toEqual(['arr', 't']);
    await expectTensors(c, m.tensors);
    expect(c.objects!.numpyScalars).toEqual([{ path: 'scalar', dtype: '<f4', value: 1.5 }]);
    expect(c.objects!.globals.map((g) => g.name)).toEqual(expect.arrayContaining(['numpy.core.multiarray._reconstruct', 'numpy.core.multiarray.scalar', 'numpy.ndarray', 'numpy.dtype']));
  });

  it('a tensor subclass (torch: as_subclass) is refused naming its class and path, not guessed', async () => {
    await expect(openTorchCheckpoint(source('tensor-subclass.pt'), { allowObjects: true })).rejects.toMatchObject({
      code: 'TorchUnsupportedTensor', tensor: 'sub', message: expect.stringContaining('tpmodels.MyT'),
    });
    const c = await openTorchCheckpoint(source('tensor-subclass.pt'), { allowObjects: true, select: 'w' });
    await expectTensors(c, manifest('tensor-subclass.pt').tensors.map((t) => ({ ...t, name: 'tensor' })));
  });

  it('numpy object arrays stay refused, by name; the rest of the file still selects', async () => {
    await expect(openTorchCheckpoint(source('numpy-object-array.pt'), { allowObjects: true })).rejects.toMatchObject({ code: 'TorchUnsupportedTensor', message: expect.stringContaining('objs') });
    const c = await openTorchCheckpoint(source('numpy-object-array.pt'), { allowObjects: true, select: 'w' });
    expect(c.tensors.map((t) => t.name)).toEqual(['tensor']); // a selected lone tensor is named 'tensor', as for every checkpoint
  });
});
