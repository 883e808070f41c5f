import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BytesSource, type ByteSource } from '../src/io/source.ts';
import { TensorportError } from '../src/errors.ts';
import { readHeader, validateSafetensors } from '../src/safetensors/header.ts';
import { checkLayout, decodeHeaderJson, type DeclaredTensor } from '../src/safetensors/validate.ts';
import { entry, stBytes, validFile } from './helpers/safetensors-bytes.ts';

const FIXTURES = join(__dirname, '../../../fixtures/safetensors');

// The malformed corpus (fixtures/safetensors/malformed) is checked by corpus.test.ts.

describe('valid fixtures', () => {
  const files = ['all_dtypes', 'empty_tensors', 'metadata_only', 'minimal', 'names', 'no_tensors', 'scalars', 'transformer_shard'];
  it.each(files)('%s.safetensors validates and matches its manifest', async (f) => {
    const bytes = new Uint8Array(readFileSync(join(FIXTURES, `${f}.safetensors`)));
    const r = await validateSafetensors(new BytesSource(bytes));
    expect(r.errors).toEqual([]);
    const manifest = JSON.parse(readFileSync(join(FIXTURES, `${f}.safetensors.manifest.json`), 'utf8')) as { tensors?: unknown };
    const names = r.header!.tensors.map((t) => t.name).sort();
    const listed = manifestNames(manifest).sort();
    if (listed.length) expect(names).toEqual(listed);
  });
});

function manifestNames(m: { tensors?: unknown }): string[] {
  const t = m.tensors;
  if (Array.isArray(t)) return t.map((x) => (x as { name: string }).name);
  if (t && typeof t === 'object') return Object.keys(t);
  return [];
}

describe('validateSafetensors', () => {
  it('never throws; reports the first error with code, offset, tensor and path', async () => {
    const r = await validateSafetensors(new BytesSource(stBytes(`{"w":${entry('F32', [2, 2], 0, 4)}}`, 4), 'x.safetensors'));
    expect(r.valid).toBe(false);
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]).toMatchObject({ code: 'TensorInvalidInfo', tensor: 'w', path: 'x.safetensors', offset: 9 });
  });

  it('reports warnings for accepted oddities', async () => {
    const header = ` {"__metadata__":{"k":"a","k":"b"},"t":["U8",[1],[0,1]],"u":{"dtype":"U8","shape":[1],"data_offsets":[1,2],"note":"x"}}`;
    const r = await validateSafetensors(new BytesSource(stBytes(header, 2)));
    expect(r.valid).toBe(true);
    expect(r.warnings.map((w) => w.code).sort()).toEqual(['DuplicateMetadataKey', 'LeadingWhitespace', 'TensorEntryAsArray', 'UnknownTensorField']);
    expect(r.header!.metadata!.get('k')).toBe('b');
  });

  it('rejects every truncation of a valid file, and every extension by one byte', async () => {
    const file = validFile([['a', 'F32', [2, 3], 24], ['b', 'F4', [4], 2], ['c', 'BOOL', [], 1]], { format: 'pt' });
    expect((await validateSafetensors(new BytesSource(file))).valid).toBe(true);
    for (let len = 0; len < file.length; len++) {
      const r = await validateSafetensors(new BytesSource(file.subarray(0, len)));
      expect(r.valid, `length ${len}`).toBe(false);
      const code = r.errors[0]!.code;
      if (len < 8) expect(code).toBe('HeaderTooSmall');
      else if (len < file.length - 27) expect(code).toBe('InvalidHeaderLength');
      else expect(code).toBe('MetadataIncompleteBuffer');
    }
    const longer = new Uint8Array(file.length + 1);
    longer.set(file);
    expect((await validateSafetensors(new BytesSource(longer))).errors[0]!.code).toBe('MetadataIncompleteBuffer');
  });

  it('does not call read() more than twice, nor past the header', async () => {
    const file = validFile([['a', 'U8', [1000], 1000]]);
    const reads: [number, number][] = [];
    const src = new BytesSource(file);
    const spy: ByteSource = {
      size: src.size,
      name: src.name,
      get bytesRead() {
        return src.bytesRead;
      },
      read: (o, l) => {
        reads.push([o, l]);
        return src.read(o, l);
      },
      close: () => src.close(),
    };
    const h = await readHeader(spy);
    expect(reads).toEqual([[0, 8], [8, h.headerLength]]);
    expect(spy.bytesRead).toBe(8 + h.headerLength);
  });
});

describe('hostile inputs', () => {
  it('huge N values: too large or beyond the file', async () => {
    for (const n of [100_000_001n, 2n ** 32n, 2n ** 63n, 2n ** 64n - 1n]) {
      expect((await validateSafetensors(new BytesSource(stBytes('{}', 0, n)))).errors[0]!.code).toBe('HeaderTooLarge');
    }
    expect((await validateSafetensors(new BytesSource(stBytes('{}', 0, 3)))).errors[0]!.code).toBe('InvalidHeaderLength');
  });

  it('overflowing offsets: u64::MAX begin/end, end + 8 + N beyond u64', async () => {
    const max = '18446744073709551615';
    const cases: [string, string][] = [
      [`{"a":${entry('U8', [0], max, max)}}`, 'InvalidOffset'],
      [`{"a":${entry('U8', [1], 0, 1)},"b":${entry('U8', ['2305843009213693951'], 1, '2305843009213693952')}}`, 'MetadataIncompleteBuffer'],
      [`{"a":${entry('U8', ['18446744073709551615'], 0, max)}}`, 'ValidationOverflow'],
      [`{"a":${entry('U8', ['18446744073709551614'], 0, '18446744073709551614')}}`, 'ValidationOverflow'],
    ];
    for (const [h, code] of cases) {
      expect((await validateSafetensors(new BytesSource(stBytes(h, 1)))).errors[0]!.code, h).toBe(code);
    }
    // offsets beyond 2^53 sort and print exactly (2^60 + 1 has no double of its own)
    const wide = `{"b":${entry('U8', [1], '1152921504606846977', '1152921504606846978')},"a":${entry('U8', [1], 0, 1)}}`;
    const e = (await validateSafetensors(new BytesSource(stBytes(wide, 1)))).errors[0]!;
    expect(e.code).toBe('InvalidOffset');
    expect(e.message).toContain('`b`: data_offsets [1152921504606846977, 1152921504606846978] begins at 1152921504606846977, leaving a gap after 1');
  });

  it('overlaps and gaps', async () => {
    const overlap = `{"a":${entry('U8', [8], 0, 8)},"b":${entry('U8', [8], 4, 12)}}`;
    const gap = `{"a":${entry('U8', [4], 0, 4)},"b":${entry('U8', [4], 8, 12)}}`;
    const nested = `{"a":${entry('U8', [12], 0, 12)},"b":${entry('U8', [4], 4, 8)}}`;
    for (const h of [overlap, gap, nested]) {
      const r = await validateSafetensors(new BytesSource(stBytes(h, 12)));
      expect(r.errors[0]!.code).toBe('InvalidOffset');
      expect(r.errors[0]!.tensor).toBe('b');
    }
  });

  it('10k tensors all at [0, n] is InvalidOffset (not a quadratic blowup)', async () => {
    const parts = Array.from({ length: 10_000 }, (_, i) => `"t${i}":${entry('F32', [4], 0, 16)}`);
    const r = await validateSafetensors(new BytesSource(stBytes(`{${parts.join(',')}}`, 16)));
    expect(r.errors[0]!.code).toBe('InvalidOffset');
  });

  it('10k valid tensors in reverse key order are sorted by offset', async () => {
    const parts = Array.from({ length: 10_000 }, (_, i) => `"t${9_999 - i}":${entry('U8', [2], (9_999 - i) * 2, (10_000 - i) * 2)}`);
    const h = await readHeader(new BytesSource(stBytes(`{${parts.join(',')}}`, 20_000)));
    expect(h.tensors[0]!.name).toBe('t0');
    expect(h.tensors[9_999]!.name).toBe('t9999');
  });

  it('100k-level nesting anywhere gives a typed error, no stack overflow', async () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    for (const h of [deep, `{"a":${deep}}`, `{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"x":${deep}}}`, `{"__metadata__":${deep}}`]) {
      const r = await validateSafetensors(new BytesSource(stBytes(h)));
      expect(r.valid).toBe(false);
      expect(['InvalidHeaderJson', 'InvalidHeaderStructure']).toContain(r.errors[0]!.code);
    }
  });

  it('a 10 MB string and a million-element unknown array are handled', async () => {
    const big = `{"__metadata__":{"k":"${'a'.repeat(10_000_000)}"}}`;
    expect((await validateSafetensors(new BytesSource(stBytes(big)))).valid).toBe(true);
    const arr = `{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"x":[${'0,'.repeat(1_000_000)}0]}}`;
    expect((await validateSafetensors(new BytesSource(stBytes(arr)))).valid).toBe(true);
  });

  it('a shape with 100k dims of 1', async () => {
    const h = `{"a":${entry('U8', Array(100_000).fill(1), 0, 1)}}`;
    const r = await validateSafetensors(new BytesSource(stBytes(h, 1)));
    expect(r.valid).toBe(true);
    expect(r.header!.tensors[0]!.shape.length).toBe(100_000);
  });
});

describe('checkLayout directly', () => {
  const t = (name: string, dtype: DeclaredTensor['dtype'], dims: number[], begin: number, end: number): DeclaredTensor => ({
    name, dtype, shape: dims, begin, end, entryOffset: 0,
  });
  it('sorts by (begin, end) stably and returns the data end via the buffer check', () => {
    const sorted = checkLayout([t('b', 'U8', [2], 2, 4), t('z', 'U8', [0], 2, 2), t('a', 'U8', [2], 0, 2)], 10n, 8n + 10n + 4n);
    expect(sorted.map((x) => x.name)).toEqual(['a', 'z', 'b']);
  });
  it('multiplies left to right like try_fold(checked_mul)', () => {
    const big = (dims: bigint[]): DeclaredTensor => ({ ...t('x', 'U8', [], 0, 0), shape: dims.map(Number), exactShape: dims });
    expect(() => checkLayout([big([0n, 2n ** 64n - 1n, 2n ** 64n - 1n])], 2n, 10n)).not.toThrow();
    expect(() => checkLayout([big([2n ** 32n, 2n ** 32n, 0n])], 2n, 10n)).toThrow(expect.objectContaining({ code: 'ValidationOverflow' }) as unknown as Error);
  });
  it('decodeHeaderJson judges tensor entries after the whole object (serde flatten order)', () => {
    // the bad dtype comes first, but the syntax error later in the object is what serde reports
    expect(() => decodeHeaderJson(`{"a":${entry('X', [], 0, 0)},"b":[01]}`, 8)).toThrow(expect.objectContaining({ code: 'InvalidHeaderJson' }) as unknown as Error);
    // metadata is judged as it is read
    expect(() => decodeHeaderJson(`{"a":${entry('X', [], 0, 0)},"__metadata__":5}`, 8)).toThrow(expect.objectContaining({ code: 'InvalidHeaderStructure' }) as unknown as Error);
    expect(() => decodeHeaderJson(`{"a":${entry('X', [], 0, 0)}}`, 8)).toThrow(TensorportError);
  });
});
