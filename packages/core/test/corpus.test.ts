/**
 * The malformed-header corpus (fixtures/safetensors/malformed): for every file, our accept/reject
 * must equal what safetensors 0.8.0 said when the corpus was generated. The one deliberate
 * difference: duplicate tensor names, which the reference resolves last-wins (sometimes into a
 * valid file), are always refused with DuplicateTensorName.
 */
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BytesSource, readHeader, TensorportError, validateSafetensors } from '../src/index.ts';

const CORPUS = join(dirname(fileURLToPath(import.meta.url)), '../../../fixtures/safetensors/malformed');

interface Verdict {
  file: string;
  description: string;
  accepted: boolean;
  referenceError: string | null;
  referenceVariant?: string | null;
  duplicateName?: boolean;
  size: number;
}

const verdicts = JSON.parse(await readFile(join(CORPUS, 'verdicts.json'), 'utf8')) as Verdict[];

/** Cases at the 10^8-byte header limit: too big to commit, so the recipe is stored instead. */
interface LargeCase {
  name: string;
  description: string;
  header: string;
  pad: string;
  n: number;
  dataLength: number;
  accepted: boolean;
  referenceError: string | null;
  referenceVariant?: string;
}
const large = JSON.parse(await readFile(join(CORPUS, 'large.json'), 'utf8')) as LargeCase[];

function build(c: LargeCase): Uint8Array {
  const header = new TextEncoder().encode(c.header);
  const out = new Uint8Array(8 + c.n + c.dataLength);
  new DataView(out.buffer).setBigUint64(0, BigInt(c.n), true);
  out.set(header, 8);
  out.fill(c.pad.charCodeAt(0), 8 + header.byteLength, 8 + c.n);
  return out;
}

/** The crate's error variant → the codes tensorport may use for it. */
const CODES: Record<string, string[]> = {
  HeaderTooSmall: ['HeaderTooSmall'],
  HeaderTooLarge: ['HeaderTooLarge'],
  InvalidHeaderLength: ['InvalidHeaderLength'],
  InvalidHeader: ['InvalidHeaderUtf8'],
  // serde_json reports syntax, type, unknown-variant and missing-field errors alike.
  InvalidHeaderDeserialization: ['InvalidHeaderJson', 'InvalidHeaderStructure', 'UnknownDtype'],
  InvalidOffset: ['InvalidOffset'],
  TensorInvalidInfo: ['TensorInvalidInfo'],
  MetadataIncompleteBuffer: ['MetadataIncompleteBuffer'],
  ValidationOverflow: ['ValidationOverflow'],
  MisalignedSlice: ['MisalignedSlice'],
};

async function load(v: Verdict): Promise<Uint8Array> {
  const bytes = new Uint8Array(await readFile(join(CORPUS, v.file)));
  expect(bytes.byteLength).toBe(v.size);
  return bytes;
}

describe('malformed corpus', () => {
  it('is the corpus the generator wrote (≥ 80 cases, both verdicts present)', () => {
    expect(verdicts.length).toBeGreaterThanOrEqual(80);
    expect(verdicts.some((v) => v.accepted)).toBe(true);
    expect(verdicts.some((v) => !v.accepted)).toBe(true);
    expect(verdicts.filter((v) => v.duplicateName).length).toBeGreaterThanOrEqual(4);
  });

  const plain = verdicts.filter((v) => !v.duplicateName);
  it.each(plain.map((v) => [v.file, v] as const))('%s matches the reference verdict', async (_file, v) => {
    const result = await validateSafetensors(new BytesSource(await load(v), v.file));
    const why = `${v.description}\nreference: ${v.referenceError ?? 'accepted'}\nours: ${JSON.stringify(result.errors)}`;
    expect(result.valid, why).toBe(v.accepted);
    if (v.accepted) {
      expect(result.errors).toEqual([]);
      return;
    }
    expect(result.errors).toHaveLength(1);
    const variant = v.referenceVariant;
    expect(variant, `no crate variant recognised in ${v.referenceError}`).toBeTruthy();
    expect(CODES[variant!], why).toContain(result.errors[0]!.code);
  });

  const dups = verdicts.filter((v) => v.duplicateName);
  it.each(dups.map((v) => [v.file, v] as const))('%s: duplicate tensor name is refused', async (_file, v) => {
    const result = await validateSafetensors(new BytesSource(await load(v), v.file));
    expect(result.valid).toBe(false);
    expect(result.errors[0]?.code, v.description).toBe('DuplicateTensorName');
  });

  it.each(large.map((c) => [c.name, c] as const))('%s (built from its recipe) matches the reference verdict', async (_name, c) => {
    const result = await validateSafetensors(new BytesSource(build(c), c.name));
    expect(result.valid, `${c.description}: ${JSON.stringify(result.errors)}`).toBe(c.accepted);
    if (!c.accepted) expect(CODES[c.referenceVariant!]).toContain(result.errors[0]!.code);
  });

  it('readHeader throws a TensorportError (never another error) for every rejected file', async () => {
    let rejected = 0;
    for (const v of verdicts) {
      const bytes = await load(v);
      const outcome = await readHeader(new BytesSource(bytes, v.file)).then(
        () => null,
        (e: unknown) => e,
      );
      if (v.accepted && !v.duplicateName) {
        expect(outcome, v.file).toBeNull();
      } else {
        expect(outcome, v.file).toBeInstanceOf(TensorportError);
        rejected++;
      }
    }
    expect(rejected).toBe(verdicts.filter((v) => !v.accepted || v.duplicateName).length);
  });
});
