import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileSource } from '@tensorport/core/node';
import { identify } from '../src/identify.ts';

const DIR = join(import.meta.dirname, '../../../fixtures/identify');

/** fixtures/identify/ (written by generate.py with the real tools) → expected kind and warnings. */
const TABLE: [file: string, kind: string, details: Record<string, string | number>, warns: boolean][] = [
  ['model.safetensors', 'safetensors', { tensors: 2 }, false],
  ['really-safetensors.bin', 'safetensors', {}, true],
  ['model.safetensors.index.json', 'safetensors-index', {}, false],
  ['config.json', 'json', {}, false],
  ['array.npy', 'npy', {}, false],
  ['arrays.npz', 'npz', { members: 2 }, false],
  ['mlx-quantized.safetensors', 'mlx-quantized', { quantizedLayers: 1 }, false],
  ['mlx-quantized.npz', 'mlx-quantized', { quantizedLayers: 1 }, false],
  ['checkpoint.pt', 'torch-zip', {}, false],
  ['legacy.pt', 'torch-legacy', {}, false],
  ['scripted.pt', 'torchscript', {}, false],
  ['plain.pkl', 'pickle', {}, false],
  ['notes.zip', 'zip', { members: 1 }, false],
  ['keras.h5', 'hdf5', {}, false],
  ['userblock.h5', 'hdf5', { superblockOffset: 512 }, false],
  ['relu.onnx', 'onnx', { producer: 'tensorport-fixtures' }, false],
  ['tiny.gguf', 'gguf', { version: 3, tensorCount: '2', kvCount: '2' }, false],
];

describe('identify: fixtures made by numpy, safetensors, torch, h5py, onnx, gguf', () => {
  it.each(TABLE)('%s is %s', async (file, kind, details, warns) => {
    const source = await FileSource.open(join(DIR, file));
    try {
      const r = await identify(source);
      expect(r.kind).toBe(kind);
      expect(r.details).toMatchObject(details);
      expect(r.warnings.length > 0).toBe(warns);
      expect(r.bytesRead).toBeLessThanOrEqual(64 * 1024);
    } finally {
      await source.close();
    }
  });
});
