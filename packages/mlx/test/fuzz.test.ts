import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DTYPES, isTensorportError, type DType } from '@tensorport/core';
import { dequantizeCheckpoint, findQuantizedLayers, type TensorInfo } from '../src/index.ts';
import { collect, memTensor } from './helpers/memory.ts';

const arbDim = fc.oneof(fc.integer({ min: 0, max: 9 }), fc.constantFrom(16, 24, 32, 64, 96, 128, 2 ** 31, 2 ** 40));
const arbTensor = fc.record({
  path: fc.constantFrom('a', 'b', 'm.x'),
  suffix: fc.constantFrom('weight', 'scales', 'biases', 'bias'),
  dtype: fc.constantFrom<DType>('U32', 'U32', 'F16', 'BF16', 'F32', 'U8', ...DTYPES),
  shape: fc.array(arbDim, { minLength: 0, maxLength: 4 }),
});
const arbConfig = fc.oneof(
  fc.constant(undefined),
  fc.record({ quantization: fc.record({ bits: fc.integer({ min: 0, max: 9 }), group_size: fc.constantFrom(16, 32, 64, 128, 100), a: fc.oneof(fc.boolean(), fc.record({ bits: fc.integer({ min: 1, max: 8 }) })) }, { requiredKeys: [] }) }),
  fc.jsonValue(),
);

describe('hostile tensor sets', () => {
  it('recognition either returns consistent layers or throws a TensorportError', () => {
    fc.assert(
      fc.property(fc.array(arbTensor, { maxLength: 8 }), arbConfig, (specs, config) => {
        const tensors: TensorInfo[] = specs.map((s) => ({ name: `${s.path}.${s.suffix}`, dtype: s.dtype, shape: s.shape }));
        try {
          for (const l of findQuantizedLayers({ tensors }, { config })) {
            const w = tensors.find((t) => t.name === l.weight)!;
            const s = tensors.find((t) => t.name === l.scales)!;
            expect(w.dtype).toBe('U32');
            expect(l.cols * l.bits).toBe(w.shape[w.shape.length - 1]! * 32);
            expect(l.cols).toBe(s.shape[s.shape.length - 1]! * l.groupSize);
            if (l.biases === null) expect(l.mode).not.toBe('affine');
          }
        } catch (e) {
          if (!isTensorportError(e)) throw e;
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('dequantizing random bytes under random valid layouts never crashes and yields the declared size', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(2, 3, 4, 5, 6, 8),
        fc.constantFrom(32, 64, 128),
        fc.constantFrom<DType>('F16', 'BF16', 'F32'),
        fc.integer({ min: 0, max: 5 }),
        fc.uint8Array({ minLength: 4096, maxLength: 4096 }),
        async (bits, gs, dt, rows, noise) => {
          const cols = gs * 2;
          const size = dt === 'F32' ? 4 : 2;
          const slice = (n: number, off: number) => Uint8Array.from({ length: n }, (_, i) => noise[(off + i) % noise.length]!);
          const tensors = [
            memTensor('a.weight', 'U32', [rows, (cols * bits) / 32], slice((rows * cols * bits) / 8, 0)),
            memTensor('a.scales', dt, [rows, 2], slice(rows * 2 * size, 7)),
            memTensor('a.biases', dt, [rows, 2], slice(rows * 2 * size, 13)),
          ];
          const d = dequantizeCheckpoint({ tensors, metadata: null }, { bits, groupSize: gs });
          const out = await collect(d.tensors[0]!);
          expect(out.byteLength).toBe(rows * cols * size);
        },
      ),
      { numRuns: 200 },
    );
  });
});
