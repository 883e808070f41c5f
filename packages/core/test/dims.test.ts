import { describe, expect, it } from 'vitest';
import { internDims, parseHeaderBytes } from '../src/index.ts';

function header(json: string): Uint8Array {
  const text = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + text.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(text.length), true);
  out.set(text, 8);
  return out;
}

describe('internDims', () => {
  it('gives one frozen array per distinct shape, and leaves long shapes alone', () => {
    const a = internDims([3, 7, 11]);
    const b = internDims([3, 7, 11]);
    expect(b).toBe(a);
    expect(Object.isFrozen(a)).toBe(true);
    expect(internDims([3, 7, 12])).not.toBe(a);
    expect(internDims([37, 11])).not.toBe(internDims([3, 711]));
    expect(internDims([])).toEqual([]);
    const long = [1, 2, 3, 4, 5, 6, 7, 8, 9];
    expect(internDims([...long])).not.toBe(internDims([...long]));
  });

  it('a parsed header: tensors of one shape share its array, with the right dims', () => {
    const json = '{"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},"b":{"dtype":"F32","shape":[2,3],"data_offsets":[24,48]},"c":{"dtype":"F32","shape":[3,2],"data_offsets":[48,72]}}';
    const bytes = header(json);
    const file = new Uint8Array(bytes.length + 72);
    file.set(bytes);
    const h = parseHeaderBytes(file.subarray(8, bytes.length), file.length);
    const [a, b, c] = h.tensors;
    expect(a!.shape).toEqual([2, 3]);
    expect(b!.shape).toBe(a!.shape);
    expect(c!.shape).toEqual([3, 2]);
    expect(Object.isFrozen(a!.shape)).toBe(true);
  });
});
