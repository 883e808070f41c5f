import { TensorportError } from '@tensorport/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { openTorchCheckpoint, runPickle, scanCheckpoint, scanPickle, StorageTable } from '../src/index.ts';
import { findTensors } from '../src/torch/walk.ts';
import { FIXTURES, readBytes, SAMPLES } from './helpers/paths.ts';

/** A torch-style state dict pickle to mutate: the object pickle of the legacy sample [137, 375). */
const seeds = [
  readBytes(`${SAMPLES}legacy_shared.pt`).subarray(137, 375),
  readBytes(`${FIXTURES}malicious/builtins_getattr.pkl`),
  readBytes(`${FIXTURES}malicious/stack_global_memo.pkl`),
  readBytes(`${FIXTURES}malicious/memo_bomb.pkl`),
];

/** Loading and scanning either succeed or throw a TensorportError: never a TypeError, RangeError or hang. */
function exercise(bytes: Uint8Array): void {
  try {
    const r = runPickle(bytes, 0, { mode: 'load', persistentLoad: new StorageTable('any').load, limits: { maxWork: 1 << 20 } });
    findTensors(r.value!);
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
  }
  const s = scanPickle(bytes, { limits: { maxWork: 1 << 20 } });
  expect(s.safe).toBe(s.findings.length === 0);
}

const mutation = fc.record({
  seed: fc.integer({ min: 0, max: seeds.length - 1 }),
  edits: fc.array(fc.record({ at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }), kind: fc.constantFrom('set', 'insert', 'delete') }), { minLength: 1, maxLength: 8 }),
  cut: fc.option(fc.nat(), { nil: undefined }),
});

describe('property: hostile bytes only ever produce typed errors', () => {
  it('seed pickles parse as expected before mutation', () => {
    expect(runPickle(seeds[0]!, 0, { mode: 'load', persistentLoad: new StorageTable('legacy').load }).value).toMatchObject({ kind: 'dict' });
  });
  it('a persistent id whose storage key is a huge integer is a typed error (found by seed 1888771308)', () => {
    // ('storage', torch.FloatStorage, 2**70, 'cpu', 1) as BINPERSID: the key is a Python int, not a str.
    const head = [0x80, 0x02, 0x58, 7, 0, 0, 0, ...Buffer.from('storage'), 0x63, ...Buffer.from('torch\nFloatStorage\n')];
    const key = [0x8a, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0x40];
    const rest = [0x58, 3, 0, 0, 0, ...Buffer.from('cpu'), 0x4b, 1, 0x74, 0x51, 0x2e];
    const bytes = Uint8Array.from([0x80, 0x02, 0x28, ...head.slice(2), ...key, ...rest]);
    expect(() => runPickle(bytes, 0, { mode: 'load', persistentLoad: new StorageTable('zip').load })).toThrow(TensorportError);
    expect(() => runPickle(bytes, 0, { mode: 'load', persistentLoad: new StorageTable('zip').load })).toThrow(/storage key must be decimal digits, got int/);
  });
  it('mutated pickles', () => {
    fc.assert(fc.property(mutation, ({ seed, edits, cut }) => {
      const b = [...seeds[seed]!];
      for (const e of edits) {
        const at = e.at % (b.length + 1);
        if (e.kind === 'set' && at < b.length) b[at] = e.byte;
        else if (e.kind === 'insert') b.splice(at, 0, e.byte);
        else if (b.length > 0) b.splice(at % b.length, 1);
      }
      exercise(Uint8Array.from(cut === undefined ? b : b.slice(0, cut % (b.length + 1))));
    }), { numRuns: 2000 });
  });
  it('random opcode streams', () => {
    // bias towards real opcodes so the machine gets deep before failing
    const ops = [0x28, 0x29, 0x2e, 0x30, 0x31, 0x32, 0x4e, 0x5d, 0x61, 0x62, 0x65, 0x68, 0x71, 0x73, 0x74, 0x75, 0x7d, 0x81, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8f, 0x90, 0x91, 0x93, 0x94, 0x52, 0x51, 0x4b, 0x8a];
    const stream = fc.array(fc.oneof(fc.constantFrom(...ops), fc.integer({ min: 0, max: 255 })), { maxLength: 300 });
    fc.assert(fc.property(stream, (body) => exercise(Uint8Array.from([0x80, 0x04, ...body]))), { numRuns: 3000 });
  });
});

describe('property: mutated checkpoints only ever produce typed errors', () => {
  const files = ['simple_state_dict.pt', 'legacy_shared.pt', 'shared_views.pt', 'big_endian_crafted.pt'].map((f) => readBytes(`${SAMPLES}${f}`));
  it('open, scan and stream every tensor', async () => {
    await fc.assert(fc.asyncProperty(
      fc.integer({ min: 0, max: files.length - 1 }),
      fc.array(fc.record({ at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }), { minLength: 1, maxLength: 4 }),
      fc.option(fc.nat(), { nil: undefined }),
      async (i, edits, cut) => {
        const b = files[i]!.slice();
        for (const e of edits) b[e.at % b.length] = e.byte;
        const bytes = cut === undefined ? b : b.subarray(0, cut % (b.length + 1));
        try {
          const c = await openTorchCheckpoint(bytes);
          for (const t of c.tensors) {
            let n = 0;
            for await (const ch of t.chunks()) n += ch.byteLength;
            expect(n).toBe(t.byteLength);
          }
        } catch (e) {
          if (!(e instanceof TensorportError)) throw e;
        }
        const r = await scanCheckpoint(bytes);
        expect(r.safe).toBe(r.findings.length === 0);
      },
    ), { numRuns: 1500 });
  });
});
