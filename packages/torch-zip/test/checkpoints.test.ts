import { readFileSync } from 'node:fs';
import { BytesSource, TensorportError } from '@tensorport/core';
import { nodeZlibCodec } from '@tensorport/core/node';
import { describe, expect, it } from 'vitest';
import { openTorchCheckpoint, TORCH_DTYPES, type TorchDtype } from '../src/index.ts';
import { digest } from './helpers/digest.ts';
import { FIXTURES, readBytes, SAMPLES } from './helpers/paths.ts';

interface Expected { dtype: string; shape: number[]; sha256: string }
/** Written by fixtures/torch/generate.py from the tensors torch itself saved and loaded. */
const manifest = JSON.parse(readFileSync(`${FIXTURES}checkpoints/manifest.json`, 'utf8')) as Record<string, { torch: string; tensors: Record<string, Expected> }>;

const open = (file: string, opts = {}) => openTorchCheckpoint(new BytesSource(readBytes(`${FIXTURES}checkpoints/${file}`), file), opts);

function safetensorsShape(e: Expected): number[] {
  const info = TORCH_DTYPES[e.dtype as TorchDtype];
  return 'packed' in info ? [...e.shape.slice(0, -1), e.shape[e.shape.length - 1]! * 2] : e.shape;
}

describe('checkpoints written by torch 2.13 and 1.13 (fixtures/torch/checkpoints)', () => {
  it('has files from both torch versions', () => {
    const versions = new Set(Object.values(manifest).map((m) => m.torch.slice(0, 4)));
    expect(versions).toEqual(new Set(['2.13', '1.13']));
  });
  for (const [file, m] of Object.entries(manifest)) {
    if (file.startsWith('nested')) continue;
    it(`${file}: every tensor (${Object.keys(m.tensors).length}) equals what torch.load returned`, async () => {
      const c = await open(file, { keepAliases: true });
      expect(c.tensors.map((t) => t.name).sort()).toEqual(Object.keys(m.tensors).sort()); // the manifest's keys are sorted
      for (const t of c.tensors) {
        const e = m.tensors[t.name]!;
        expect(t.dtype).toBe(TORCH_DTYPES[e.dtype as TorchDtype].safetensors);
        expect(t.shape).toEqual(safetensorsShape(e));
        expect(await digest(t, 5), t.name).toBe(e.sha256); // odd chunk size: swaps and gathers across chunk edges
      }
    });
  }
  it('reads storage data zero-copy: contiguous tensors are plain byte ranges of the file', async () => {
    const c = await open('dtypes.pt');
    expect(c.tensors.every((t) => t.range !== undefined)).toBe(true);
    const be = await open('big_endian.pt');
    expect(be.tensors.filter((t) => t.range !== undefined).map((t) => t.dtype).sort()).toEqual(['BOOL', 'F8_E4M3', 'F8_E5M2', 'I8', 'U8']);
    expect(be.warnings.map((w) => w.code)).toEqual(['TorchBigEndian']);
  });
  it('keeps one name per tied weight and records the others in metadata, as convert.py does', async () => {
    for (const file of ['tied.pt', 'tied_t113.pt', 'proto4.pt']) {
      const c = await open(file);
      expect(c.tensors.map((t) => t.name)).toEqual(['embed.weight']);
      expect(c.aliases).toEqual({ 'head.weight': 'embed.weight' });
      expect([...c.metadata!]).toEqual([['format', 'pt'], ['head.weight', 'embed.weight']]);
    }
    const tf = await open('transformers.pt');
    // transformers keeps the input embedding and re-ties the head from it (issue 11 item 4)
    expect(tf.aliases).toEqual({ 'lm_head.weight': 'model.embed_tokens.weight' });
    expect(tf.tensors.length).toBe(Object.keys(manifest['transformers.pt']!.tensors).length - 1);
  });
  it('materialises views: offsets, transposes, stride-0 expansions, steps', async () => {
    const c = await open('views.pt');
    const byName = new Map(c.tensors.map((t) => [t.name, t]));
    for (const n of ['row2', 'tail']) expect(byName.get(n)!.range).toBeDefined();
    for (const n of ['col1', 'transposed', 'expanded', 'strided']) expect(byName.get(n)!.range).toBeUndefined();
    expect(c.aliases).toEqual({});
  });
  for (const file of ['nested.pt', 'nested_t113.pt']) {
    it(`${file}: tensors anywhere are named by path, other values dropped with a warning, select picks a subtree`, async () => {
      const all = await open(file);
      expect(all.tensors.map((t) => t.name)).toEqual(['model.layer.weight', 'model.layer.bias', 'optimizer.state.0.momentum_buffer', 'history.0']);
      // one warning naming every path left out (issue 11 item 5), the paths also in `dropped`
      const dropped = all.warnings.filter((w) => w.code === 'TorchValueDropped');
      expect(dropped.length).toBe(1);
      expect(all.dropped.map((d) => d.name)).toEqual(['epoch', 'lr', 'optimizer.param_groups.0.lr', 'optimizer.param_groups.0.params.0', 'history.1']);
      for (const d of all.dropped) expect(dropped[0]!.message).toContain(`${d.name} (${d.type})`);
      const model = await open(file, { select: 'model' });
      expect(model.tensors.map((t) => t.name)).toEqual(['layer.weight', 'layer.bias']);
      expect(model.warnings).toEqual([]);
      const state = await open(file, { select: 'optimizer.state.0' });
      expect(state.tensors.map((t) => t.name)).toEqual(['momentum_buffer']);
      await expect(open(file, { select: 'model.nope' })).rejects.toMatchObject({ code: 'TensorNotFound' });
      // a selection holding no tensor would convert to an empty file (issue 11): refused, naming it
      await expect(open(file, { select: 'epoch' })).rejects.toMatchObject({ code: 'TensorNotFound', tensor: 'epoch', message: 'select: "epoch" is an int, not a tensor; nothing to convert' });
      await expect(open(file, { select: 'optimizer.param_groups' })).rejects.toMatchObject({ code: 'TensorNotFound', message: 'select: "optimizer.param_groups" is a list holding no tensors (2 other values); nothing to convert' });
    });
  }
});

describe('reference samples (fixtures/torch/reference, torch 1.13)', () => {
  const expected = JSON.parse(readFileSync(`${SAMPLES}expected.json`, 'utf8')) as Record<string, { tensors?: Record<string, Expected> }>;
  const openSample = (file: string, opts = {}) => openTorchCheckpoint(new BytesSource(readBytes(`${SAMPLES}${file}`), file), opts);
  for (const file of ['simple_state_dict.pt', 'simple_state_dict_proto4.pt', 'simple_state_dict_proto5.pt', 'module_state_dict.pt', 'shared_views.pt', 'parameters.pt', 'legacy_format.pt', 'legacy_shared.pt', 'saved_to_buffer.pth', 'many_storages.bin', 'big_endian_crafted.pt', 'tensor_with_attr.pt', 'training_checkpoint.pt', 'python_values.pt']) {
    it(`${file}: hashes match torch's`, async () => {
      const c = await openSample(file, { keepAliases: true });
      const want = expected[file]!.tensors!;
      const names = c.tensors.map((t) => t.name);
      for (const [name, e] of Object.entries(want)) {
        if (!names.includes(name)) continue; // values torch keeps that are not tensors at a path (python_values)
        const t = c.tensors.find((x) => x.name === name)!;
        expect(t.shape).toEqual(e.shape);
        expect(await digest(t), name).toBe(e.sha256);
      }
      expect(names.filter((n) => n in want).length).toBeGreaterThan(0);
    });
  }
  it('dtypes.pt: refuses complex128 by name, or skips it on request', async () => {
    await expect(openSample('dtypes.pt')).rejects.toMatchObject({ code: 'TorchUnsupportedDtype', tensor: 'complex128' });
    const c = await openSample('dtypes.pt', { skipUnsupported: true });
    expect(c.warnings.map((w) => w.tensor)).toEqual(['complex128']);
    const want = expected['dtypes.pt']!.tensors!;
    for (const t of c.tensors) expect(await digest(t), t.name).toBe(want[t.name]!.sha256);
  });
  it('reads _rebuild_tensor_v3 (float8, uint16), _rebuild_parameter_with_state and _rebuild_from_type_v2', async () => {
    const f8 = await openSample('crafted_v3_float8_e4m3fn.pt');
    expect(f8.tensors.map((t) => [t.name, t.dtype, t.shape])).toEqual([['x', 'F8_E4M3', [4]]]);
    const u16 = await openSample('crafted_v3_uint16.pt');
    const bytes: number[] = [];
    for await (const ch of u16.tensors[0]!.chunks()) bytes.push(...ch);
    expect(Buffer.from(bytes).toString('hex')).toBe('01000200ffff');
    expect((await openSample('crafted_parameter_with_state.pt')).tensors.map((t) => t.name)).toEqual(['t']);
    expect((await openSample('crafted_rebuild_from_type_v2.pt')).tensors.map((t) => t.name)).toEqual(['t']);
  });
  it('refuses quantized and sparse tensors by name', async () => {
    await expect(openSample('quantized.pt')).rejects.toMatchObject({ code: 'TorchUnsupportedTensor', tensor: 'q' });
    await expect(openSample('sparse_coo.pt')).rejects.toMatchObject({ code: 'TorchUnsupportedTensor', tensor: 'sp' });
  });
  it('refuses ZIP layouts torch refuses, and storages whose size disagrees with their record', async () => {
    const probe = (f: string) => openTorchCheckpoint(new BytesSource(readBytes(`${SAMPLES}writer_probe/${f}`), f));
    const cases: Array<[string, string]> = [
      ['no_version.pt', 'TorchInvalidCheckpoint'], ['version_99.pt', 'TorchInvalidCheckpoint'], ['no_prefix.pt', 'TorchInvalidCheckpoint'],
      ['other_prefix_entry.pt', 'TorchInvalidCheckpoint'], ['first_entry_other_prefix.pt', 'TorchInvalidCheckpoint'],
      ['short_record.pt', 'TorchStorageMismatch'], ['long_record.pt', 'TorchStorageMismatch'],
      ['dup_data_pkl.pt', 'ZipDuplicateName'], ['dup_evil_first.pt', 'ZipDuplicateName'],
    ];
    for (const [f, code] of cases) await expect(probe(f), f).rejects.toMatchObject({ code });
    for (const f of ['minimal_stored.pt', 'reordered.pt', 'version_data_dir.pt', 'byteorder_big.pt']) expect((await probe(f)).tensors.length, f).toBe(1);
  });
  it('reads deflated members (re-zipped by another tool) given a codec, streaming storages without a range', async () => {
    const probe = (f: string, opts = {}) => openTorchCheckpoint(new BytesSource(readBytes(`${SAMPLES}writer_probe/${f}`), f), opts);
    await expect(probe('deflated.pt')).rejects.toMatchObject({ code: 'ZipUnsupportedMethod' });
    const c = await probe('deflated.pt', { zipCodec: nodeZlibCodec });
    const ref = await probe('minimal_stored.pt');
    expect(c.tensors.map((t) => [t.name, t.shape, t.range])).toEqual([['w', [3], undefined]]);
    expect(await digest(c.tensors[0]!, 4)).toBe(await digest(ref.tensors[0]!));
    expect(c.warnings.map((w) => w.code)).toEqual(['TorchDeflatedStorage']);
  });
  it('refuses TorchScript archives and tar checkpoints', async () => {
    const ts = await import('node:zlib').then(() => null);
    expect(ts).toBeNull();
    const tar = new Uint8Array(1024);
    tar.set(new TextEncoder().encode('ustar'), 257);
    await expect(openTorchCheckpoint(tar)).rejects.toMatchObject({ code: 'TorchUnsupportedArchive' });
    await expect(openTorchCheckpoint(new Uint8Array(16))).rejects.toBeInstanceOf(TensorportError);
  });
});
