/**
 * Differential check against the reference: a few hundred seeded random and mutated headers are run
 * through both `safetensors.deserialize` (0.8.0, Python) and `validateSafetensors`; accept/reject and
 * the error variant must agree. The one deliberate difference, duplicate tensor names, is excluded.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { BytesSource } from '../src/io/source.ts';
import { DTYPES, dtypeBits } from '../src/dtype.ts';
import { validateSafetensors } from '../src/safetensors/header.ts';
import { decodeHeaderJson } from '../src/safetensors/validate.ts';
import { requirePython, runPython } from './helpers/python.ts';
import { stBytes } from './helpers/safetensors-bytes.ts';

const py = await requirePython(['safetensors']);

const VARIANT: Record<string, string> = {
  HeaderTooSmall: 'HeaderTooSmall', HeaderTooLarge: 'HeaderTooLarge', InvalidHeaderLength: 'InvalidHeaderLength',
  InvalidHeaderUtf8: 'InvalidHeader', InvalidHeaderJson: 'InvalidHeaderDeserialization', InvalidHeaderStructure: 'InvalidHeaderDeserialization',
  UnknownDtype: 'InvalidHeaderDeserialization', InvalidOffset: 'InvalidOffset', ValidationOverflow: 'ValidationOverflow',
  MisalignedSlice: 'MisalignedSlice', TensorInvalidInfo: 'TensorInvalidInfo', MetadataIncompleteBuffer: 'MetadataIncompleteBuffer',
};
const LAYOUT = new Set(['InvalidOffset', 'ValidationOverflow', 'MisalignedSlice', 'TensorInvalidInfo']);

/** Reads [u32 LE length][bytes]… from stdin; prints one JSON verdict per file. */
const SCRIPT = `
import sys, struct, json
from safetensors import deserialize
data = sys.stdin.buffer.read()
pos = 0
out = []
MSGS = [("header too small", "HeaderTooSmall"), ("header too large", "HeaderTooLarge"),
        ("invalid header length", "InvalidHeaderLength"), ("invalid UTF-8 in header", "InvalidHeader"),
        ("invalid JSON in header", "InvalidHeaderDeserialization"), ("invalid offset for tensor", "InvalidOffset"),
        ("overflow computing buffer size", "ValidationOverflow"), ("slicing for subbytes", "MisalignedSlice"),
        ("invalid shape, data type, or offset", "TensorInvalidInfo"), ("incomplete metadata", "MetadataIncompleteBuffer")]
while pos < len(data):
    (n,) = struct.unpack_from("<I", data, pos)
    buf = data[pos + 4: pos + 4 + n]
    pos += 4 + n
    try:
        deserialize(buf)
        out.append({"ok": True})
    except Exception as e:
        msg = str(e)
        variant = next((v for k, v in MSGS if k in msg), "?")
        out.append({"ok": False, "variant": variant, "message": msg[:300]})
print(json.dumps(out))
`;

// ---- generators ----

const enc = new TextEncoder();
const BIG_DIMS = ['18446744073709551615', '9223372036854775808', '4611686018427387904', '2305843009213693952', '2305843009213693951', '4294967296'];
const BAD_NUMS = ['2.0', '-1', '1e1', '-0', '18446744073709551616', '1.5'];
/** Numbers for unknown fields, including ones around serde_json's f64 overflow boundary. */
const numberToken = fc.oneof(
  fc.integer({ min: -1000, max: 1000 }).map(String),
  fc.tuple(fc.integer({ min: 1, max: 9 }), fc.stringMatching(/^[0-9]{0,20}$/), fc.integer({ min: 295, max: 312 }), fc.boolean()).map(
    ([a, b, e, neg]) => `${neg ? '-' : ''}${a}.${b || '0'}e${e}`,
  ),
  fc.tuple(fc.integer({ min: 300, max: 320 }), fc.integer({ min: 1, max: 9 })).map(([k, d]) => `${d}${'7'.repeat(k)}`),
  fc.constantFrom('1e400', '1e-400', '0e999999999999', '1.7976931348623157e308', '1.7976931348623158e308', '17976931348623157e292', '-0', '1E+2', '0.5e-3'),
);
const jsonLeaf = fc.oneof(numberToken, fc.constantFrom('true', 'false', 'null', '"s"', '"\\u00e9"', '"\\ud83d\\ude00"', '"\\ud800"', '[]', '{}'));
const jsonValue: fc.Arbitrary<string> = fc.letrec<{ v: string }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    jsonLeaf,
    fc.array(tie('v'), { maxLength: 3 }).map((xs) => `[${xs.join(',')}]`),
    fc.array(fc.tuple(fc.constantFrom('a', 'b', ''), tie('v')), { maxLength: 3 }).map((kv) => `{${kv.map(([k, v]) => `"${k}":${v}`).join(',')}}`),
  ),
})).v;

const dimToken = fc.oneof({ weight: 60, arbitrary: fc.integer({ min: 0, max: 5 }).map(String) }, { weight: 2, arbitrary: fc.constantFrom(...BIG_DIMS) }, { weight: 1, arbitrary: fc.constantFrom(...BAD_NUMS) });
const dtypeName = fc.oneof({ weight: 60, arbitrary: fc.constantFrom(...DTYPES) }, { weight: 1, arbitrary: fc.constantFrom('f32', 'E8M0', '', 'F32 ', 'C128') });

interface GenTensor { name: string; dtype: string; dims: string[]; dtypeForm: number; form: number; extra: string | null; dupField: boolean; sizeDelta: number; fieldOrder: number }
const tensorArb: fc.Arbitrary<GenTensor> = fc.record({
  name: fc.oneof(fc.constantFrom('a', 'b', 'w.0', '', '__proto__', 'é'), fc.string({ maxLength: 3 })),
  dtype: dtypeName,
  dims: fc.array(dimToken, { maxLength: 4 }),
  dtypeForm: fc.nat({ max: 59 }), // 0: {"X":null}, 1: {"X":{}}, else a string
  form: fc.nat({ max: 29 }), // 0: array form
  extra: fc.option(jsonValue, { freq: 12 }),
  dupField: fc.nat({ max: 39 }).map((x) => x === 0),
  sizeDelta: fc.oneof({ weight: 30, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: -2, max: 2 }) }),
  fieldOrder: fc.nat({ max: 5 }),
});

/** The byte size serde would demand, or a small stand-in when it is not a sane number. */
function nominalSize(dtype: string, dims: string[]): number {
  if (!(DTYPES as readonly string[]).includes(dtype) || dims.some((d) => !/^[0-9]+$/.test(d))) return 4;
  let n = 1n;
  for (const d of dims) n *= BigInt(d);
  const bits = n * BigInt(dtypeBits(dtype as (typeof DTYPES)[number]));
  if (bits % 8n !== 0n || bits / 8n > 64n) return Number((bits / 8n) % 17n);
  return Number(bits / 8n);
}

interface GenFile { tensors: GenTensor[]; metadata: string | null; lead: string; trail: string; dataDelta: number; nDelta: number; order: number[] }
const fileArb: fc.Arbitrary<GenFile> = fc.record({
  tensors: fc.array(tensorArb, { maxLength: 4 }),
  metadata: fc.option(fc.oneof({ weight: 12, arbitrary: fc.constantFrom('null', '{}', '{"format":"pt"}', '{"k":"v","k":"w"}', '{"k":"\\u0000"}') }, { weight: 1, arbitrary: fc.constantFrom('{"k":1}', '[]', '"x"', '{"k":"\\ud800"}') }), { freq: 2 }),
  lead: fc.constantFrom('', '', '', '', '', ' ', '\n\t', '\r'),
  trail: fc.oneof({ weight: 20, arbitrary: fc.constantFrom('', '', '  ', '\t\n') }, { weight: 1, arbitrary: fc.constantFrom('\0', '\u000b', '\u00a0') }),
  dataDelta: fc.oneof({ weight: 20, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: -2, max: 2 }) }),
  nDelta: fc.oneof({ weight: 20, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: -2, max: 2 }) }),
  order: fc.array(fc.nat(), { minLength: 5, maxLength: 5 }),
});

function render(f: GenFile): Uint8Array {
  const parts: string[] = [];
  if (f.metadata !== null) parts.push(`"__metadata__":${f.metadata}`);
  let pos = 0;
  const entries: string[] = [];
  for (const t of f.tensors) {
    const size = Math.max(0, nominalSize(t.dtype, t.dims) + t.sizeDelta);
    const begin = pos;
    pos += size;
    const dtype = t.dtypeForm === 0 ? `{"${t.dtype}":null}` : t.dtypeForm === 1 ? `{"${t.dtype}":{}}` : `"${t.dtype}"`;
    const shape = `[${t.dims.join(',')}]`;
    const offsets = `[${begin},${pos}]`;
    let body: string;
    if (t.form === 0) body = `[${dtype},${shape},${offsets}]`;
    else {
      const fields = [`"dtype":${dtype}`, `"shape":${shape}`, `"data_offsets":${offsets}`];
      if (t.extra !== null) fields.push(`"extra":${t.extra}`);
      if (t.dupField) fields.push(fields[t.fieldOrder % 3]!);
      const k = t.fieldOrder % fields.length;
      body = `{${[...fields.slice(k), ...fields.slice(0, k)].join(',')}}`;
    }
    entries.push(`${JSON.stringify(t.name)}:${body}`);
  }
  // shuffle key order deterministically
  const keyed = entries.map((e, i) => [f.order[i % f.order.length]! * 10 + i, e] as const).sort((a, b) => a[0] - b[0]);
  parts.push(...keyed.map(([, e]) => e));
  const header = enc.encode(`${f.lead}{${parts.join(',')}}${f.trail}`);
  const data = new Uint8Array(Math.max(0, pos + f.dataDelta));
  return stBytes(header, data, Math.max(0, header.length + f.nDelta));
}

interface Mutation { at: number; kind: number; byte: number }
const MUTATION_BYTES = enc.encode('{}[]",:0123456789-.eE \\u\t\n');
const mutationArb = fc.array(fc.record({ at: fc.nat(), kind: fc.nat({ max: 2 }), byte: fc.nat({ max: 255 }) }), { minLength: 1, maxLength: 3 });

function mutate(file: Uint8Array, muts: Mutation[]): Uint8Array {
  let b = Array.from(file);
  const n = Number(new DataView(file.buffer, file.byteOffset, 8).getBigUint64(0, true));
  for (const m of muts) {
    const span = Math.max(1, Math.min(n, b.length - 8));
    const at = 8 + (m.at % span);
    const value = m.byte < 200 ? MUTATION_BYTES[m.byte % MUTATION_BYTES.length]! : m.byte;
    if (m.kind === 0) b[at] = value;
    else if (m.kind === 1) b.splice(at, 0, value);
    else b.splice(at, 1);
  }
  // keep N consistent with an insertion/deletion half of the time
  const delta = b.length - file.length;
  const out = new Uint8Array(b);
  if (muts[0]!.byte % 2 === 0) new DataView(out.buffer).setBigUint64(0, BigInt(Math.max(0, n + delta)), true);
  b = [];
  return out;
}

function corpus(): Uint8Array[] {
  const files = fc.sample(fileArb, { seed: 20261129, numRuns: 500 }).map(render);
  const mutated = fc.sample(fc.tuple(fileArb, mutationArb), { seed: 7, numRuns: 250 }).map(([f, m]) => mutate(render(f), m));
  return [...files, ...mutated];
}

/** True when two declared tensors share (begin, end): the reference's HashMap order then decides which fails first. */
function hasTies(bytes: Uint8Array): boolean {
  try {
    const n = Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true));
    const d = decodeHeaderJson(new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes.subarray(8, 8 + n)), 8);
    const seen = new Set<string>();
    for (const t of d.tensors) {
      const k = `${t.begin},${t.end}`;
      if (seen.has(k)) return true;
      seen.add(k);
    }
  } catch {
    return false;
  }
  return false;
}

describe.skipIf(!py)('differential vs safetensors 0.8.0 (Python)', () => {
  it('accepts and rejects the same headers, with the same error variant', async () => {
    const files = corpus();
    const framed = new Uint8Array(files.reduce((n, f) => n + 4 + f.length, 0));
    const view = new DataView(framed.buffer);
    let pos = 0;
    for (const f of files) {
      view.setUint32(pos, f.length, true);
      framed.set(f, pos + 4);
      pos += 4 + f.length;
    }
    const verdicts = JSON.parse(await runPython(py!.exe, SCRIPT, { input: framed })) as { ok: boolean; variant?: string; message?: string }[];
    expect(verdicts).toHaveLength(files.length);
    let compared = 0;
    let accepted = 0;
    const mismatches: string[] = [];
    for (let i = 0; i < files.length; i++) {
      const ref = verdicts[i]!;
      const ours = await validateSafetensors(new BytesSource(files[i]!));
      const code = ours.errors[0]?.code;
      if (code === 'DuplicateTensorName') continue;
      compared++;
      if (ref.ok) accepted++;
      const text = new TextDecoder().decode(files[i]!.subarray(8, 400));
      if (ours.valid !== ref.ok) {
        mismatches.push(`#${i} ours=${code ?? 'OK'} ref=${ref.ok ? 'OK' : ref.message} header=${JSON.stringify(text)}`);
      } else if (!ref.ok && VARIANT[code!] !== ref.variant && !(LAYOUT.has(ref.variant!) && LAYOUT.has(VARIANT[code!]!) && hasTies(files[i]!))) {
        mismatches.push(`#${i} ours=${code} ref=${ref.message} header=${JSON.stringify(text)}`);
      }
    }
    console.log(`differential: ${compared} of ${files.length} files compared (${accepted} accepted by both); reference verdicts:`, JSON.stringify(verdicts.reduce<Record<string, number>>((m, v) => ((m[v.variant ?? 'OK'] = (m[v.variant ?? 'OK'] ?? 0) + 1), m), {})));
    expect(mismatches).toEqual([]);
    // the corpus must exercise both outcomes
    expect(compared).toBeGreaterThan(400);
    expect(accepted).toBeGreaterThan(50);
    expect(compared - accepted).toBeGreaterThan(50);
  });
});
