import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { BytesSource, type ByteSource } from '../src/io/source.ts';
import { DETECT_BYTES, detectFormat, detectSource } from '../src/detect.ts';
import { stBytes, validFile } from './helpers/safetensors-bytes.ts';

const FIXTURES = join(__dirname, '../../../fixtures');
const bytes = (...xs: (number | string)[]) => new Uint8Array(xs.flatMap((x) => (typeof x === 'string' ? [...x].map((c) => c.charCodeAt(0)) : [x])));
const detect = (b: Uint8Array, size = b.length) => detectFormat(b.subarray(0, DETECT_BYTES), size);

describe('detectFormat', () => {
  it('recognizes the magic core owns', () => {
    expect(detect(bytes('PK', 3, 4, 20, 0, 0, 0))).toBe('zip');
    expect(detect(bytes('PK', 5, 6, 0, 0, 0, 0))).toBe('zip');
    expect(detect(bytes(0x89, 'HDF\r\n', 0x1a, '\n', 0))).toBe('hdf5');
    expect(detect(bytes('{"weight_map":{}}'))).toBe('json');
    expect(detect(bytes('hello world'))).toBe('unknown');
    expect(detect(new Uint8Array(0))).toBe('unknown');
  });

  it("leaves other packages' magic unknown, never safetensors, however large the file", () => {
    // .npy (npz), GGUF (gguf) and PROTO pickles (torch-zip) are recognised by their own packages
    const big = 2 ** 40;
    expect(detect(bytes(0x93, 'NUMPY', 1, 0, 'v', 0, '{'), big)).toBe('unknown');
    expect(detect(bytes('GGUF', 3, 0, 0, 0, 0, 0, 0, 0, '{'), big)).toBe('unknown');
    for (const p of [0, 1, 2, 3, 4, 5]) expect(detect(bytes(0x80, p, '}q', 0, 0, 0, 0, 0, ' '), big)).toBe('unknown');
    // protocol 4+: FRAME and its u64 length; a tiny frame's zero high bytes sit where the JSON would start
    expect(detect(bytes(0x80, 4, 0x95, 1, 0, 0, 0, 0, 0, 0, 0, '{'), big)).toBe('unknown');
  });

  it('recognizes safetensors by a plausible header length and a JSON start', () => {
    const f = validFile([['a', 'U8', [3], 3]]);
    expect(detect(f)).toBe('safetensors');
    expect(detect(stBytes(' \n{}'))).toBe('safetensors');
    // N beyond the file, N above 10^8, N < 2, or a non-JSON first byte: not safetensors
    expect(detect(stBytes('{}', 0, 100))).toBe('unknown');
    expect(detect(stBytes('{}', 0, 100_000_001), 200_000_000)).toBe('unknown');
    expect(detect(stBytes('{}', 0, 1))).toBe('unknown');
    expect(detect(stBytes('[]'))).toBe('unknown');
    // only the declared size matters, not how many head bytes were passed
    expect(detectFormat(f.subarray(0, 9), f.length)).toBe('safetensors');
  });

  it('classifies the repository fixtures', () => {
    const seen = new Set<string>();
    for (const [dir, ext, want] of [['safetensors', '.safetensors', 'safetensors'], ['npz', '.npz', 'zip']] as const) {
      let files: string[] = [];
      try {
        files = readdirSync(join(FIXTURES, dir)).filter((f) => f.endsWith(ext));
      } catch {
        continue;
      }
      for (const name of files) {
        const b = new Uint8Array(readFileSync(join(FIXTURES, dir, name)));
        expect(detect(b), name).toBe(want);
        seen.add(want);
      }
    }
    expect(seen.has('safetensors')).toBe(true);
  });
});

describe('detectSource', () => {
  it('reads at most 16 bytes', async () => {
    const f = validFile([['a', 'U8', [3000], 3000]]);
    const src = new BytesSource(f);
    const reads: number[] = [];
    const spy: ByteSource = { size: src.size, name: src.name, bytesRead: 0, read: (o, l) => (reads.push(l), src.read(o, l)), close: async () => {} };
    expect(await detectSource(spy)).toBe('safetensors');
    expect(reads).toEqual([16]);
    expect(await detectSource(new BytesSource(bytes('PK', 3, 4)))).toBe('zip');
    expect(await detectSource(new BytesSource(new Uint8Array(0)))).toBe('unknown');
  });
});
