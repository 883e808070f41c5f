import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CORE_IDENTIFIERS, identifyWith, kindsOf, type KindIdentifier } from '../src/identify/index.ts';
import { BytesSource } from '../src/io/source.ts';

const DIR = join(import.meta.dirname, '../../../fixtures/identify');
const file = (name: string) => new BytesSource(new Uint8Array(readFileSync(join(DIR, name))), name);

/**
 * Core's part of identify knows safetensors and the formats tensorport only names; torch, npz,
 * MLX and GGUF are the format packages' (assembled in packages/tensorport/src/identify.ts, whose
 * tests hold every kind).
 */
describe('identifyWith: core identifiers alone, and how identifiers combine', () => {
  it('names safetensors, HDF5 and ONNX; a torch ZIP is only a ZIP, a GGUF unknown, without their packages', async () => {
    expect((await identifyWith(CORE_IDENTIFIERS, file('model.safetensors'))).kind).toBe('safetensors');
    expect((await identifyWith(CORE_IDENTIFIERS, file('keras.h5'))).kind).toBe('hdf5');
    expect((await identifyWith(CORE_IDENTIFIERS, file('relu.onnx'))).kind).toBe('onnx');
    expect((await identifyWith(CORE_IDENTIFIERS, file('checkpoint.pt'))).kind).toBe('zip');
    expect((await identifyWith(CORE_IDENTIFIERS, file('tiny.gguf'))).kind).toBe('unknown');
    expect(Object.keys(kindsOf(CORE_IDENTIFIERS))).not.toContain('torch-zip');
  });

  it('the first identifier to answer wins; a refiner may replace an answer it refines', async () => {
    const first: KindIdentifier = { name: 'first', kinds: { mine: { what: 'mine', can: 'x', extensions: ['.mine'] } }, identify: async (p) => (p.coarse === 'safetensors' ? { kind: 'mine' } : null) };
    const r = await identifyWith([first, ...CORE_IDENTIFIERS], file('model.safetensors'));
    expect(r).toMatchObject({ kind: 'mine', what: 'mine' });
    // the file's '.safetensors' extension disagrees with the kind it was given
    expect(r.warnings.map((w) => w.code)).toEqual(['ExtensionMismatch']);
    const refiner: KindIdentifier = { name: 'refiner', kinds: { better: { what: 'better', can: 'y', extensions: ['.safetensors'] } }, refines: ['safetensors'], identify: async (_p, current) => (current?.kind === 'safetensors' ? { kind: 'better' } : null) };
    expect((await identifyWith([refiner, ...CORE_IDENTIFIERS], file('model.safetensors'))).kind).toBe('better');
    expect((await identifyWith([refiner, ...CORE_IDENTIFIERS], file('keras.h5'))).kind).toBe('hdf5');
  });
});
