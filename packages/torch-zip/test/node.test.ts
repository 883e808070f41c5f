import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BytesSource } from '@tensorport/core';
import { FileSource } from '@tensorport/core/node';
import { describe, expect, it } from 'vitest';
import { sniffTorchCheckpoint, validateTorchCheckpoint } from '../src/index.ts';
import { openTorchCheckpointFile, writeTorchCheckpointFile } from '../src/node/index.ts';
import { digest } from './helpers/digest.ts';
import { FIXTURES, PICKLESCAN, readBytes, SAMPLES } from './helpers/paths.ts';

const dir = mkdtempSync(join(tmpdir(), 'torch-zip-node-'));

describe('Node entry', () => {
  it('writes a .pt named after the file stem, all or nothing, and reads it back from disk', async () => {
    const src = await openTorchCheckpointFile(`${FIXTURES}checkpoints/transformers.pt`);
    const out = join(dir, 'model.pt');
    await writeTorchCheckpointFile(src, out);
    const back = await openTorchCheckpointFile(out);
    expect(back.tensors.map((t) => t.name)).toEqual(src.tensors.map((t) => t.name));
    for (const [i, t] of back.tensors.entries()) expect(await digest(t)).toBe(await digest(src.tensors[i]!));
    const file = await FileSource.open(out);
    expect(await sniffTorchCheckpoint(file)).toBe('torch-zip');
    await file.close();
    await expect(writeTorchCheckpointFile(src, out)).rejects.toMatchObject({ code: 'OutputExists' });
    await expect(writeTorchCheckpointFile(src, out, { force: true, inputs: [out] })).rejects.toMatchObject({ code: 'SameInputOutput' });
    await back.close();
    await src.close();
  });
  it('closes the file when opening fails', async () => {
    const bad = join(dir, 'bad.pt');
    writeFileSync(bad, 'not a checkpoint');
    await expect(openTorchCheckpointFile(bad)).rejects.toMatchObject({ code: 'UnknownFormat' });
  });
});

describe('validateTorchCheckpoint and sniffTorchCheckpoint', () => {
  const src = (f: string) => new BytesSource(readBytes(f), f);
  it('is valid for a clean checkpoint and reports warnings', async () => {
    const r = await validateTorchCheckpoint(src(`${FIXTURES}checkpoints/nested.pt`));
    expect(r.valid).toBe(true);
    expect(r.errors).toEqual([]);
    // the 5 non-tensor values left out, named in one TorchValueDropped warning (issue 11 item 5)
    expect(r.warnings.map((w) => w.code)).toEqual(['TorchValueDropped']);
    expect(r.warnings[0]!.message).toMatch(/^5 non-tensor values left out/);
  });
  it('reports scan findings, or the reader refusal, without throwing', async () => {
    const evil = await validateTorchCheckpoint(src(`${SAMPLES}evil_os_system.pt`));
    expect(evil.valid).toBe(false);
    expect(evil.errors.map((e) => e.code)).toEqual(['PickleDisallowedGlobal', 'PickleDisallowedGlobal']);
    const oob = await validateTorchCheckpoint(src(`${SAMPLES}evil_storage_oob.pt`));
    expect(oob.scan.safe).toBe(true);
    expect(oob.errors.map((e) => e.code)).toEqual(['TorchStorageMismatch']);
  });
  it('sniffs torch ZIP and legacy files, not npz or safetensors', async () => {
    expect(await sniffTorchCheckpoint(src(`${SAMPLES}simple_state_dict.pt`))).toBe('torch-zip');
    expect(await sniffTorchCheckpoint(src(`${SAMPLES}legacy_format.pt`))).toBe('torch-legacy');
    expect(await sniffTorchCheckpoint(src(`${PICKLESCAN}data2/int_arrays.npz`))).toBeNull();
    expect(await sniffTorchCheckpoint(src(`${SAMPLES}evil_os_system.pkl`))).toBeNull();
  });
});
