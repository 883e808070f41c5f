import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { BytesSource } from '../src/io/source.ts';
import { TensorportError } from '../src/errors.ts';
import { DTYPES, byteLength, type DType } from '../src/dtype.ts';
import { readHeader, validateSafetensors } from '../src/safetensors/header.ts';
import { openSafetensors } from '../src/safetensors/reader.ts';
import { stBytes } from './helpers/safetensors-bytes.ts';

/** Runs readHeader; returns the error code or the header, and asserts the read bound. */
async function attempt(bytes: Uint8Array) {
  const src = new BytesSource(bytes);
  try {
    const h = await readHeader(src);
    expect(src.bytesRead).toBe(8 + h.headerLength);
    return { ok: true as const, h };
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
    // never more than the prefix and the declared header
    const n = bytes.length >= 8 ? new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true) : 0n;
    expect(BigInt(src.bytesRead)).toBeLessThanOrEqual(8n + n);
    return { ok: false as const, code: e.code };
  }
}

interface Spec { name: string; dtype: DType; shape: number[] }
const wholeByteDtypes = DTYPES.filter((d) => !d.startsWith('F4') && !d.startsWith('F6'));
const specArb: fc.Arbitrary<Spec[]> = fc.uniqueArray(
  fc.record({
    name: fc.string({ unit: 'grapheme', maxLength: 8 }).filter((n) => n !== '__metadata__'),
    dtype: fc.constantFrom(...wholeByteDtypes),
    shape: fc.array(fc.integer({ min: 0, max: 4 }), { maxLength: 3 }),
  }),
  { selector: (s) => s.name, maxLength: 6 },
);
const metaArb = fc.option(fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), { maxKeys: 3 }));

/** A file in `order` (a permutation of the specs) for the JSON keys; data laid out in spec order. */
function build(specs: Spec[], meta: Record<string, string> | null, keyOrder: number[], pad: string): Uint8Array {
  let pos = 0;
  const entries = specs.map((s) => {
    const len = byteLength(s.dtype, s.shape);
    const e = `${JSON.stringify(s.name)}:{"dtype":"${s.dtype}","shape":[${s.shape.join(',')}],"data_offsets":[${pos},${pos + len}]}`;
    pos += len;
    return e;
  });
  const ordered = keyOrder.map((i) => entries[i]!);
  if (meta) ordered.unshift(`"__metadata__":${JSON.stringify(meta)}`);
  const data = new Uint8Array(pos).map((_, i) => i & 0xff);
  return stBytes(`{${ordered.join(',')}}${pad}`, data);
}

const fileArb = fc
  .tuple(specArb, metaArb, fc.constantFrom('', ' ', '    ', '\n\t\r'))
  .chain(([specs, meta, pad]) =>
    fc.shuffledSubarray([...specs.keys()], { minLength: specs.length, maxLength: specs.length }).map((order) => ({ specs, meta, pad, order })),
  );

describe('properties of the header reader', () => {
  it('random valid files read back exactly, sorted by offset, whatever the key order', async () => {
    await fc.assert(
      fc.asyncProperty(fileArb, async ({ specs, meta, pad, order }) => {
        const bytes = build(specs, meta, order, pad);
        const r = await attempt(bytes);
        expect(r.ok).toBe(true);
        if (!r.ok) return;
        // zero-length tensors tie on offsets; among ties key order decides (stable sort)
        expect(r.h.tensors.map((t) => [t.name, t.dtype, t.shape]).sort()).toEqual(specs.map((s) => [s.name, s.dtype, s.shape]).sort());
        for (let i = 1; i < r.h.tensors.length; i++) expect(r.h.tensors[i]!.begin).toBe(r.h.tensors[i - 1]!.end);
        expect(r.h.metadata === null ? null : Object.fromEntries(r.h.metadata)).toEqual(meta);
        const f = await openSafetensors(new BytesSource(bytes));
        for (const t of f.tensors) expect((await f.read(t.name)).length).toBe(t.byteLength);
      }),
      { numRuns: 300 },
    );
  });

  it('arbitrary bytes: only TensorportError, reads bounded by 8 + N, validate agrees and never throws', async () => {
    const prefixed = fc.tuple(fc.bigInt({ min: 0n, max: 300n }), fc.uint8Array({ maxLength: 300 })).map(([n, rest]) => stBytes(rest, 0, n));
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.uint8Array({ maxLength: 64 }), prefixed), async (bytes) => {
        const r = await attempt(bytes);
        const v = await validateSafetensors(new BytesSource(bytes));
        expect(v.valid).toBe(r.ok);
        if (!r.ok) expect(v.errors[0]!.code).toBe(r.code);
      }),
      { numRuns: 1000 },
    );
  });

  it('mutated valid files (flip, insert, delete anywhere): only TensorportError', async () => {
    const mutArb = fc.tuple(fileArb, fc.array(fc.tuple(fc.nat(), fc.nat({ max: 2 }), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }));
    await fc.assert(
      fc.asyncProperty(mutArb, async ([f, muts]) => {
        const b = Array.from(build(f.specs, f.meta, f.order, f.pad));
        for (const [at, kind, byte] of muts) {
          const i = at % (b.length + 1);
          if (kind === 0 && i < b.length) b[i] = byte;
          else if (kind === 1) b.splice(i, 0, byte);
          else b.splice(i, 1);
        }
        await attempt(new Uint8Array(b));
      }),
      { numRuns: 1000 },
    );
  });

  it('one byte of data more or less is always MetadataIncompleteBuffer', async () => {
    await fc.assert(
      fc.asyncProperty(fileArb, fc.boolean(), async (f, more) => {
        const bytes = build(f.specs, f.meta, f.order, f.pad);
        const changed = more ? new Uint8Array([...bytes, 0]) : bytes.subarray(0, bytes.length - 1);
        const headerEnd = 8 + Number(new DataView(bytes.buffer).getBigUint64(0, true));
        const r = await attempt(changed);
        expect(r.ok).toBe(false);
        if (!r.ok) expect(r.code).toBe(!more && bytes.length === headerEnd ? 'InvalidHeaderLength' : 'MetadataIncompleteBuffer');
      }),
      { numRuns: 300 },
    );
  });

  it('any data_offsets perturbation of a non-empty tensor is refused', async () => {
    const arb = fc.tuple(fileArb, fc.nat(), fc.integer({ min: 1, max: 3 }), fc.boolean()).filter(([f]) => f.specs.some((s) => byteLength(s.dtype, s.shape) > 0));
    await fc.assert(
      fc.asyncProperty(arb, async ([f, pick, delta, atEnd]) => {
        const nonEmpty = f.specs.filter((s) => byteLength(s.dtype, s.shape) > 0);
        const victim = nonEmpty[pick % nonEmpty.length]!;
        const bytes = build(f.specs, f.meta, f.order, f.pad);
        const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
        const text = new TextDecoder().decode(bytes.subarray(8, 8 + n));
        const key = `${JSON.stringify(victim.name)}:{`;
        const at = text.indexOf(key);
        const m = /"data_offsets":\[(\d+),(\d+)\]/.exec(text.slice(at));
        const [b, e] = [Number(m![1]), Number(m![2])];
        const replaced = atEnd ? `[${b},${e + delta}]` : `[${b + delta},${e}]`;
        const start = at + m!.index;
        const newText = text.slice(0, start) + `"data_offsets":${replaced}` + text.slice(start + m![0].length);
        const r = await attempt(stBytes(newText, bytes.subarray(8 + n)));
        expect(r.ok).toBe(false);
      }),
      { numRuns: 300 },
    );
  });
});
