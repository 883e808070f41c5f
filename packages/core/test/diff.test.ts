import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { diffCheckpoints, type DiffSide } from '../src/diff/index.ts';
import type { DType } from '../src/dtype.ts';
import { f32BitsToBf16, f32BitsToF16 } from '../src/float16.ts';
import type { TensorDescriptor } from '../src/tensor.ts';
import { memTensor, patternBytes } from './helpers/mem-tensor.ts';

/** A tensor whose chunks have the given size (so the two sides can stream differently). */
function chunked(t: TensorDescriptor, size: number): TensorDescriptor {
  return { ...t, chunks: () => t.chunks(size) };
}

function side(tensors: TensorDescriptor[], metadata: Record<string, string> | null = null): DiffSide {
  return { tensors, metadata: metadata ? new Map(Object.entries(metadata)) : null };
}

function f32(values: number[]): Uint8Array {
  return new Uint8Array(new Float32Array(values).buffer);
}

const t = (name: string, dtype: DType, shape: number[], data?: Uint8Array) => memTensor(name, dtype, shape, data);

describe('diffCheckpoints', () => {
  it('identical checkpoints are equal, whatever the chunking on each side', async () => {
    const data = patternBytes(4096, 3);
    const r = await diffCheckpoints(side([chunked(t('w', 'F32', [1024], data), 7 * 4 + 1)]), side([chunked(t('w', 'F32', [1024], data.slice()), 1000)]));
    expect(r).toMatchObject({ equal: true, onlyInA: [], onlyInB: [], changed: [], compared: 1, bytesCompared: 4096 });
  });

  it('names on one side, dtype and shape changes', async () => {
    const a = side([t('x', 'F32', [2]), t('y', 'F32', [2]), t('z', 'F32', [2, 3]), t('only-a', 'U8', [1])]);
    const b = side([t('x', 'F32', [2]), t('y', 'F16', [2]), t('z', 'F32', [3, 2]), t('only-b', 'U8', [1])]);
    const r = await diffCheckpoints(a, b);
    expect(r.equal).toBe(false);
    expect(r.onlyInA).toEqual(['only-a']);
    expect(r.onlyInB).toEqual(['only-b']);
    // a dtype change is still a change without tolerances, now with the values compared (in F64)
    expect(r.changed).toMatchObject([
      { name: 'y', reason: 'dtype', detail: 'F32 -> F16', mismatches: 2 },
      { name: 'z', reason: 'shape', detail: '[2,3] -> [3,2]' },
    ]);
  });

  it('one flipped bit in the middle of a tensor, across odd chunk edges', async () => {
    const data = patternBytes(1 << 16, 1);
    const other = data.slice();
    other[40_001]! ^= 0x10;
    const r = await diffCheckpoints(side([chunked(t('w', 'BF16', [1 << 15], data), 999)]), side([chunked(t('w', 'BF16', [1 << 15], other), 4096)]));
    expect(r.changed).toHaveLength(1);
    expect(r.changed[0]).toMatchObject({ name: 'w', reason: 'values', mismatches: 1, firstMismatch: 20_000 });
  });

  it('tolerances follow numpy isclose: |a-b| <= atol + rtol*|b|, NaN equal to NaN', async () => {
    const a = side([t('w', 'F32', [5], f32([1, 2, NaN, Infinity, 100]))]);
    const b = side([t('w', 'F32', [5], f32([1.001, 2, NaN, Infinity, 101]))]);
    const exact = await diffCheckpoints(a, b);
    expect(exact.changed[0]).toMatchObject({ mismatches: 2, firstMismatch: 0 });
    expect(exact.changed[0]!.maxAbs).toBeCloseTo(1, 5);
    expect(exact.changed[0]!.maxRel).toBeCloseTo(1 / 101, 5);
    // 100 vs 101: 1 <= 0.01 + 0.01*101 passes; 1 vs 1.001 passes.
    expect((await diffCheckpoints(a, b, { atol: 0.01, rtol: 0.01 })).equal).toBe(true);
    const tight = await diffCheckpoints(a, b, { atol: 0.01 });
    expect(tight.changed[0]).toMatchObject({ mismatches: 1, firstMismatch: 4 });
    // NaN against a number and +inf against -inf are never close.
    const c = side([t('w', 'F32', [5], f32([1, 2, 3, -Infinity, 100]))]);
    expect((await diffCheckpoints(a, c, { atol: 1e9 })).changed[0]).toMatchObject({ mismatches: 2, firstMismatch: 2 });
  });

  it('F16 and BF16 values decode through the core helpers', async () => {
    const h = (x: number) => {
      const u = new Uint32Array(new Float32Array([x]).buffer)[0]!;
      return u;
    };
    const f16 = (xs: number[]) => new Uint8Array(new Uint16Array(xs.map((x) => f32BitsToF16(h(x)))).buffer);
    const bf16 = (xs: number[]) => new Uint8Array(new Uint16Array(xs.map((x) => f32BitsToBf16(h(x)))).buffer);
    const r = await diffCheckpoints(side([t('a', 'F16', [2], f16([1, 2])), t('b', 'BF16', [2], bf16([1, 2]))]), side([t('a', 'F16', [2], f16([1, 2.5])), t('b', 'BF16', [2], bf16([1, 3]))]));
    expect(r.changed.map((c) => [c.name, c.maxAbs])).toEqual([['a', 0.5], ['b', 1]]);
  });

  it('dtypes without a decoder compare bitwise and report no value errors', async () => {
    const a = new Uint8Array([1, 2, 3, 4]);
    const r = await diffCheckpoints(side([t('q', 'F8_E4M3', [4], a)]), side([t('q', 'F8_E4M3', [4], new Uint8Array([1, 2, 9, 4]))]), { atol: 100 });
    expect(r.changed).toEqual([{ name: 'q', reason: 'values', mismatches: 1, firstMismatch: 2 }]);
  });

  it('tied aliases in metadata (removed -> kept) count as present and are compared to the kept tensor', async () => {
    const data = patternBytes(16, 9);
    const a = side([t('embed', 'F32', [4], data), t('lm_head', 'F32', [4], data.slice())]);
    const b = side([t('embed', 'F32', [4], data.slice())], { lm_head: 'embed' });
    const r = await diffCheckpoints(a, b);
    expect(r).toMatchObject({ equal: true, onlyInA: [], aliases: [{ name: 'lm_head', side: 'b', kept: 'embed' }], compared: 2 });
    const other = patternBytes(16, 10);
    const c = side([t('embed', 'F32', [4], data), t('lm_head', 'F32', [4], other)]);
    expect((await diffCheckpoints(c, b)).changed.map((x) => x.name)).toEqual(['lm_head|embed']);
    // Metadata naming a tensor that does not exist is no alias.
    expect((await diffCheckpoints(a, side([t('embed', 'F32', [4], data)], { lm_head: 'nope' }))).onlyInA).toEqual(['lm_head']);
  });

  it('names-only reads no data', async () => {
    const boom: TensorDescriptor = { ...t('w', 'F32', [2]), chunks: () => { throw new Error('read'); } };
    expect((await diffCheckpoints(side([boom]), side([boom]), { namesOnly: true })).equal).toBe(true);
  });

  it('a side that streams fewer bytes than it declares is an error, not equality', async () => {
    const short: TensorDescriptor = { ...t('w', 'F32', [4]), chunks: async function* () { yield new Uint8Array(8); } };
    await expect(diffCheckpoints(side([short]), side([t('w', 'F32', [4], new Uint8Array(16))]))).rejects.toMatchObject({ code: 'TensorByteLengthMismatch' });
  });

  it('refuses negative or non-finite tolerances', async () => {
    await expect(diffCheckpoints(side([]), side([]), { atol: -1 })).rejects.toMatchObject({ code: 'InvalidOption' });
    await expect(diffCheckpoints(side([]), side([]), { rtol: NaN })).rejects.toMatchObject({ code: 'InvalidOption' });
  });

  it('agrees with an element-wise reference on random F32 data and chunkings (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.float32Array({ minLength: 1, maxLength: 200 }),
        fc.array(fc.nat(199), { maxLength: 5 }),
        fc.integer({ min: 1, max: 64 }),
        fc.integer({ min: 1, max: 64 }),
        async (values, flips, ca, cb) => {
          const a = new Float32Array(values);
          const b = new Float32Array(values);
          for (const i of flips) if (i < b.length) b[i] = b[i]! + 1;
          const ba = new Uint8Array(a.buffer);
          const bb = new Uint8Array(b.buffer);
          let expected = 0;
          for (let i = 0; i < a.length; i++) {
            const x = a[i]!;
            const y = b[i]!;
            if (!(x === y || (Number.isNaN(x) && Number.isNaN(y)) || Math.abs(x - y) <= 0.5)) expected++;
          }
          const r = await diffCheckpoints(side([chunked(t('w', 'F32', [a.length], ba), ca)]), side([chunked(t('w', 'F32', [a.length], bb), cb)]), { atol: 0.5 });
          expect(r.changed[0]?.mismatches ?? 0).toBe(expected);
        },
      ),
      { numRuns: 300 },
    );
  });
});
