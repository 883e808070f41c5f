import { openZip, TensorportError } from '@tensorport/core';
import { BytesSource } from '@tensorport/core';
import fc from 'fast-check';
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runPickle, StorageTable, type RunOptions } from '../src/index.ts';
import { memoReads } from '../src/pickle/memo-reads.ts';
import { OPCODE_ARGS, OPCODE_NAMES } from '../src/pickle/opcodes.ts';
import { FIXTURES, PICKLESCAN, readBytes, SAMPLES } from './helpers/paths.ts';

/**
 * A PUT whose key no GET reads is not stored (memo-reads.ts). Whatever the bytes, that must change
 * nothing: the same value, globals, findings or error as with the memo CPython keeps.
 */
function outcome(bytes: Uint8Array, mode: RunOptions['mode'], keepEveryPut: boolean): unknown {
  try {
    const r = runPickle(bytes, 0, { mode, keepEveryPut, persistentLoad: new StorageTable('any').load, limits: { maxWork: 1 << 20 } });
    return { value: shape(r.value), end: r.end, globals: r.globals, findings: r.findings, truncated: r.truncated };
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
    return { code: e.code, message: e.message };
  }
}

/**
 * The value as a string, each object written once and then named by its first position: shared
 * references (a memo bomb's DAG) stay linear, and sharing itself is compared.
 */
function shape(root: unknown): string {
  const ids = new Map<object, number>();
  const out: string[] = [];
  const walk = (v: unknown): void => {
    if (typeof v === 'bigint') return void out.push(`${v}n`);
    if (typeof v === 'function') return void out.push('fn');
    if (typeof v !== 'object' || v === null) return void out.push(JSON.stringify(v) ?? 'undefined');
    const seen = ids.get(v);
    if (seen !== undefined) return void out.push(`@${seen}`);
    ids.set(v, ids.size);
    if (v instanceof Uint8Array) return void out.push(`b[${v.join()}]`);
    const entries = v instanceof Map ? [...v.entries()] : Array.isArray(v) ? v.map((x, i) => [i, x]) : Object.entries(v);
    out.push(v instanceof Map ? 'M{' : '{');
    for (const [k, x] of entries) {
      walk(k);
      out.push(':');
      walk(x);
      out.push(',');
    }
    out.push('}');
  };
  walk(root);
  return out.join('');
}

function same(bytes: Uint8Array): void {
  for (const mode of ['load', 'scan'] as const) expect(outcome(bytes, mode, false)).toEqual(outcome(bytes, mode, true));
}

const pickles = [
  ...readdirSync(`${FIXTURES}malicious`).filter((f) => f.endsWith('.pkl')).map((f) => readBytes(`${FIXTURES}malicious/${f}`)),
  ...['data', 'data2'].flatMap((d) => readdirSync(`${PICKLESCAN}${d}`).filter((f) => f.endsWith('.pkl')).map((f) => readBytes(`${PICKLESCAN}${d}/${f}`))),
  readBytes(`${SAMPLES}legacy_shared.pt`).subarray(137, 375),
];

async function dataPkl(path: string): Promise<Uint8Array> {
  const zip = await openZip(new BytesSource(readBytes(path), path));
  const e = zip.entries.find((x) => x.name.endsWith('/data.pkl'))!;
  return zip.readPrefix(e, e.uncompressedSize);
}

describe('the memo keeps only what some GET reads', () => {
  it('a torch.save pickle reads back a handful of the keys it stores', async () => {
    const bytes = await dataPkl(`${FIXTURES}checkpoints/transformers.pt`);
    const r = runPickle(bytes, 0, { mode: 'load', persistentLoad: new StorageTable('zip').load });
    const puts = (r.opcodes.BINPUT ?? 0) + (r.opcodes.LONG_BINPUT ?? 0);
    const reads = memoReads(bytes, 0)!;
    expect(reads).not.toBeNull();
    expect(puts).toBeGreaterThan(50);
    expect(reads.size).toBeGreaterThan(0);
    expect(reads.size * 5).toBeLessThan(puts);
    same(bytes);
  });

  it('steps over the arguments of every opcode the interpreter knows', () => {
    expect(Object.keys(OPCODE_ARGS).sort()).toEqual(Object.keys(OPCODE_NAMES).sort());
  });

  it('gives up (keeps every PUT) on MEMOIZE, an unknown opcode, a cut argument or an unparsable GET', () => {
    expect(memoReads(Uint8Array.from([0x80, 0x04, 0x4e, 0x94, 0x2e]), 0)).toBeNull();
    expect(memoReads(Uint8Array.from([0x80, 0x02, 0xff, 0x2e]), 0)).toBeNull();
    expect(memoReads(Uint8Array.from([0x80, 0x02, 0x58, 9, 0, 0, 0, 0x61]), 0)).toBeNull();
    expect(memoReads(Uint8Array.from([0x80, 0x02, 0x4e, 0x70, 0x31, 0x0a, 0x67, 0x20, 0x31, 0x0a, 0x2e]), 0)).toBeNull();
    expect([...memoReads(Uint8Array.from([0x80, 0x02, 0x4e, 0x71, 7, 0x68, 7, 0x6a, 9, 0, 0, 0, 0x67, 0x31, 0x32, 0x0a, 0x2e]), 0)!]).toEqual([7, 9, 12]);
    // a GET line of 2 MB is given up on, not spread into a call
    const long = new Uint8Array(2 << 20).fill(0x31);
    expect(memoReads(Uint8Array.from([0x80, 0x02, 0x4e, 0x67, ...long, 0x0a, 0x2e]), 0)).toBeNull();
  });

  it('changes no outcome: the fixtures and the picklescan corpus', () => {
    expect(pickles.length).toBeGreaterThan(30);
    for (const p of pickles) same(p);
  });

  it('changes no outcome: mutated pickles and random opcode streams', () => {
    const seeds = pickles.filter((p) => p.length < 4096);
    const edits = fc.array(fc.record({ at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }), kind: fc.constantFrom('set', 'insert', 'delete') }), { minLength: 1, maxLength: 8 });
    fc.assert(fc.property(fc.integer({ min: 0, max: seeds.length - 1 }), edits, (seed, es) => {
      const b = [...seeds[seed]!];
      for (const e of es) {
        const at = e.at % (b.length + 1);
        if (e.kind === 'set' && at < b.length) b[at] = e.byte;
        else if (e.kind === 'insert') b.splice(at, 0, e.byte);
        else if (b.length > 0) b.splice(at % b.length, 1);
      }
      same(Uint8Array.from(b));
    }), { numRuns: 1500 });
    // memo traffic with keys and payload bytes that look like opcodes (0x0a, 0x68, 0x71)
    const ops = [0x28, 0x29, 0x30, 0x32, 0x4e, 0x5d, 0x61, 0x65, 0x68, 0x6a, 0x71, 0x72, 0x67, 0x70, 0x0a, 0x31, 0x73, 0x74, 0x7d, 0x85, 0x86, 0x8c, 0x43, 0x94, 0x2e];
    const stream = fc.array(fc.oneof(fc.constantFrom(...ops), fc.integer({ min: 0, max: 255 }), fc.constantFrom(0, 1, 2, 3)), { maxLength: 300 });
    fc.assert(fc.property(stream, (body) => same(Uint8Array.from([0x80, 0x02, ...body, 0x2e]))), { numRuns: 3000 });
  });
});
