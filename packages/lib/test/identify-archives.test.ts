import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BytesSource } from '@tensorport/core';
import { identify } from '../src/identify.ts';

/**
 * Issue 11 item 14: Flax msgpack, Keras 3 `.keras` and torch.export `.pt2` files were "no format
 * tensorport knows". The files are made by keras, torch.export and msgpack in flax's layout
 * (fixtures/archives/generate.py); every other identify fixture must keep its verdict.
 */
const ARCHIVES = fileURLToPath(new URL('../../../fixtures/archives/', import.meta.url));
const IDENTIFY = fileURLToPath(new URL('../../../fixtures/identify/', import.meta.url));
const id = (dir: string, name: string) => identify(new BytesSource(new Uint8Array(readFileSync(dir + name)), name));

describe('identify: model archives tensorport does not convert', () => {
  it('tiny.keras (keras Model.save) is a Keras 3 archive', async () => {
    const r = await id(ARCHIVES, 'tiny.keras');
    expect(r.kind).toBe('keras');
    expect(r.members).toEqual(expect.arrayContaining(['metadata.json', 'config.json', 'model.weights.h5']));
    expect(r.can).toMatch(/^not supported/);
    expect(r.warnings).toEqual([]);
  });

  it('tiny.pt2 (torch.export.save) is a torch.export archive, not a checkpoint or TorchScript', async () => {
    const r = await id(ARCHIVES, 'tiny.pt2');
    expect(r.kind).toBe('torch-export');
    expect(r.members!.some((n) => n.endsWith('/archive_format'))).toBe(true);
    expect(r.warnings).toEqual([]);
  });

  it('flax_model.msgpack is Flax msgpack; a pickle and random bytes are not', async () => {
    const r = await id(ARCHIVES, 'flax_model.msgpack');
    expect(r.kind).toBe('flax-msgpack');
    expect(r.details).toMatchObject({ entries: 1, firstKey: 'params' });
    expect((await identify(new BytesSource(new Uint8Array([0x80, 0x04, 0x95, 0, 0]), 'x.pkl'))).kind).toBe('pickle');
    // a fixmap whose first value is a plain integer is no parameter tree
    expect((await identify(new BytesSource(new Uint8Array([0x81, 0xa1, 0x61, 0x01]), 'x'))).kind).toBe('unknown');
    // under another extension: named, with the extension warning
    const renamed = await identify(new BytesSource(new Uint8Array(readFileSync(`${ARCHIVES}flax_model.msgpack`)), 'weights.bin'));
    expect(renamed.kind).toBe('flax-msgpack');
    expect(renamed.warnings.map((w) => w.code)).toEqual(['ExtensionMismatch']);
  });

  it('the other identify fixtures keep their kinds (none becomes one of the new ones)', async () => {
    for (const name of readdirSync(IDENTIFY).filter((n) => !n.endsWith('.py') && !n.endsWith('.json'))) {
      const r = await id(IDENTIFY, name);
      expect(['keras', 'torch-export', 'flax-msgpack'], name).not.toContain(r.kind);
    }
  });
});
