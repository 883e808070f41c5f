import { TensorportError, type ErrorCode, type Finding } from '../errors.ts';
import { internDims } from '../dims.ts';
import { DTYPES, dtypeBits, dtypeRank, isDType, type DType } from '../dtype.ts';
import { describeKind, JsonCursor, U64_MAX, type NumberToken } from './json.ts';

/**
 * What a valid safetensors header is, in the reference's terms (safetensors 0.8.0 `tensor.rs`):
 * the JSON must deserialize into `HashMetadata { __metadata__: Option<HashMap<String,String>>,
 * #[serde(flatten)] tensors: HashMap<String, TensorInfo> }` and the tensors must then pass
 * `Metadata::validate`. Both steps are replicated here, including serde's quirks (see
 * docs/formats/safetensors.md), with one deliberate difference: a repeated tensor name is refused.
 */

/**
 * A tensor entry as declared, before layout validation; after it (sorted) it is the header's
 * HeaderTensor as it is, not a copy (a 100,000-tensor header made both). Integers are exact.
 */
export interface DeclaredTensor {
  name: string;
  dtype: DType;
  /** Dims as numbers (exact when ≤ 2^53). */
  shape: readonly number[];
  /** All dims exactly, present only when some dim exceeds 2^53. */
  exactShape?: bigint[];
  /** data_offsets as numbers (exact when ≤ 2^53). */
  begin: number;
  end: number;
  /** Both data_offsets exactly, present only when one exceeds 2^53 (no such file exists: the layout check refuses them). */
  exactOffsets?: readonly [bigint, bigint];
  /** File offset of the entry's key. */
  entryOffset: number;
}

export interface DeclaredHeader {
  metadata: Map<string, string> | null;
  /** In document order. */
  tensors: DeclaredTensor[];
  warnings: Finding[];
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
/** Warnings of one code beyond this many are counted, not listed. */
const WARNING_CAP = 20;

class Warnings {
  readonly list: Finding[] = [];
  private readonly counts = new Map<string, number>();
  add(f: Finding): void {
    const n = (this.counts.get(f.code) ?? 0) + 1;
    this.counts.set(f.code, n);
    if (n <= WARNING_CAP) this.list.push(f);
  }
  finish(): Finding[] {
    for (const [code, n] of this.counts) {
      if (n > WARNING_CAP) this.list.push({ code, message: `${n - WARNING_CAP} more ${code} warnings not listed` });
    }
    return this.list;
  }
}

function structureError(message: string, offset: number, tensor?: string, code: ErrorCode = 'InvalidHeaderStructure'): TensorportError {
  return new TensorportError(code, tensor === undefined ? message : `tensor \`${tensor}\`: ${message}`, tensor === undefined ? { offset } : { offset, tensor });
}

/**
 * Decodes the header JSON (`text` is the decoded header, `utf8` the bytes it was decoded from;
 * `baseOffset` the file offset of its first byte). Throws InvalidHeaderJson, InvalidHeaderStructure, UnknownDtype or DuplicateTensorName.
 *
 * Mirrors serde's order: syntax errors anywhere in the top-level object and `__metadata__` errors
 * surface as they are met; tensor entries are judged after the object is complete (serde buffers
 * them for the flattened map), in document order; trailing characters last.
 */
export function decodeHeaderJson(text: string, baseOffset: number, utf8?: Uint8Array): DeclaredHeader {
  const c = new JsonCursor(text, utf8 ? { baseOffset, utf8 } : { baseOffset });
  const warnings = new Warnings();
  if (c.skipWs() > 0) {
    warnings.add({ code: 'LeadingWhitespace', message: 'header starts with whitespace (accepted by the reference reader since 0.8; the README still says it must start with `{`)', offset: baseOffset });
  }
  const kind = c.peekKind();
  if (kind !== 'object') {
    const at = c.offset;
    c.skipValue();
    throw structureError(`header must be a JSON object, found ${describeKind(kind)}`, at);
  }
  c.enterObject();
  let metadata: Map<string, string> | null = null;
  let sawMetadata = false;
  const tensors: DeclaredTensor[] = [];
  const seen = new Set<string>();
  let pending: TensorportError | null = null;
  const unknownFields = new Set<string>();

  for (let key = c.nextKey(); key !== null; key = c.nextKey()) {
    const keyOffset = c.lastKeyOffset;
    if (key === '__metadata__') {
      if (sawMetadata) throw structureError('duplicate field `__metadata__`', keyOffset);
      sawMetadata = true;
      metadata = decodeMetadata(c, warnings);
      continue;
    }
    const start = c.mark();
    if (pending) {
      c.skipValue();
      continue;
    }
    if (seen.has(key)) {
      // Entries are decoded as they come until one fails (pending), so the first of the two is here.
      const first = tensors.find((t) => t.name === key)!.entryOffset;
      pending = new TensorportError(
        'DuplicateTensorName',
        `tensor name \`${key}\` appears twice in the header (entries at bytes ${first} and ${keyOffset}); the reference keeps the last one silently, tensorport refuses`,
        { offset: keyOffset, tensor: key, other: key },
      );
      c.skipValue();
      continue;
    }
    seen.add(key);
    try {
      tensors.push(decodeTensorEntry(c, key, keyOffset, warnings, unknownFields));
    } catch (e) {
      if (!(e instanceof TensorportError) || e.code === 'InvalidHeaderJson') throw e;
      // serde would have finished buffering the whole object before judging this entry.
      pending = e;
      c.reset(start);
      c.skipValue();
    }
  }
  if (pending) throw pending;
  c.end();
  return { metadata, tensors, warnings: warnings.finish() };
}

function decodeMetadata(c: JsonCursor, warnings: Warnings): Map<string, string> | null {
  const kind = c.peekKind();
  const at = c.offset;
  if (kind === 'null') {
    c.readLiteral();
    return null;
  }
  if (kind !== 'object') throw structureError(`\`__metadata__\` must be a map of strings or null, found ${describeKind(kind)}`, at);
  c.enterObject();
  const map = new Map<string, string>();
  for (let key = c.nextKey(); key !== null; key = c.nextKey()) {
    const keyOffset = c.lastKeyOffset;
    const vk = c.peekKind();
    if (vk !== 'string') throw structureError(`\`__metadata__\` value for \`${key}\` must be a string, found ${describeKind(vk)}`, c.offset);
    if (map.has(key)) {
      warnings.add({ code: 'DuplicateMetadataKey', message: `\`__metadata__\` key \`${key}\` appears more than once; the last value wins (as in the reference)`, offset: keyOffset });
    }
    map.set(key, c.readString());
  }
  return map;
}

type Field = 'dtype' | 'shape' | 'data_offsets';
const FIELDS: readonly Field[] = ['dtype', 'shape', 'data_offsets'];

function decodeTensorEntry(c: JsonCursor, name: string, entryOffset: number, warnings: Warnings, unknownFields: Set<string>): DeclaredTensor {
  const kind = c.peekKind();
  const at = c.offset;
  let dtype: DType | undefined;
  let shape: Dims | undefined;
  let offsets: Offsets | undefined;
  if (kind === 'object') {
    c.enterObject();
    for (let key = c.nextKey(); key !== null; key = c.nextKey()) {
      const keyOffset = c.lastKeyOffset;
      const field = FIELDS.find((f) => f === key);
      if (field === undefined) {
        if (!unknownFields.has(key)) {
          unknownFields.add(key);
          warnings.add({ code: 'UnknownTensorField', message: `unknown field \`${key}\` in a tensor entry is ignored (as in the reference)`, tensor: name, offset: keyOffset });
        }
        c.skipValue();
        continue;
      }
      const dup = field === 'dtype' ? dtype !== undefined : field === 'shape' ? shape !== undefined : offsets !== undefined;
      if (dup) throw structureError(`duplicate field \`${field}\``, keyOffset, name);
      if (field === 'dtype') dtype = decodeDtype(c, name);
      else if (field === 'shape') shape = decodeShape(c, name);
      else offsets = decodeOffsets(c, name);
    }
    if (dtype === undefined) throw structureError('missing field `dtype`', at, name);
    if (shape === undefined) throw structureError('missing field `shape`', at, name);
    if (offsets === undefined) throw structureError('missing field `data_offsets`', at, name);
  } else if (kind === 'array') {
    // serde lets a struct be written as a sequence of its fields, in declaration order.
    warnings.add({ code: 'TensorEntryAsArray', message: 'tensor entry written as [dtype, shape, data_offsets] (serde accepts it; no writer produces it)', tensor: name, offset: at });
    c.enterArray();
    const need = (i: number) => {
      if (!c.nextItem()) throw structureError(`invalid length ${i}, expected struct TensorInfo with 3 elements`, at, name);
    };
    need(0);
    dtype = decodeDtype(c, name);
    need(1);
    shape = decodeShape(c, name);
    need(2);
    offsets = decodeOffsets(c, name);
    if (c.nextItem()) throw structureError('invalid length, expected 3 elements in sequence', at, name);
  } else {
    throw structureError(`invalid type: ${describeKind(kind)}, expected struct TensorInfo`, at, name);
  }
  const t: DeclaredTensor = { name, dtype, shape: shape.dims, begin: Number(offsets[0]), end: Number(offsets[1]), entryOffset };
  if (shape.exact) t.exactShape = shape.exact;
  if (typeof offsets[0] === 'bigint' || typeof offsets[1] === 'bigint') t.exactOffsets = [BigInt(offsets[0]), BigInt(offsets[1])];
  return t;
}

function decodeDtype(c: JsonCursor, tensor: string): DType {
  const kind = c.peekKind();
  const at = c.offset;
  if (kind === 'string') {
    const s = c.readString();
    if (!isDType(s)) throw unknownDtype(s, at, tensor);
    return DTYPES[dtypeRank(s)]!; // the one constant string, not a copy per tensor
  }
  if (kind === 'object') {
    // serde's externally tagged enum form: {"F32": null}. Checked like serde: one key, a known
    // variant, then a unit value.
    c.enterObject();
    const variant = c.nextKey();
    if (variant === null) throw structureError('invalid dtype: map, expected map with a single key', at, tensor);
    let unit = true;
    if (c.peekKind() === 'null') c.readLiteral();
    else {
      unit = false;
      c.skipValue();
    }
    if (c.nextKey() !== null) throw structureError('invalid dtype: map, expected map with a single key', at, tensor);
    if (!isDType(variant)) throw unknownDtype(variant, at, tensor);
    if (!unit) throw structureError(`invalid dtype {"${variant}": …}: expected unit (null)`, at, tensor);
    return DTYPES[dtypeRank(variant)]!;
  }
  throw structureError(`invalid type for dtype: ${describeKind(kind)}, expected string or map`, at, tensor);
}

function unknownDtype(name: string, offset: number, tensor: string): TensorportError {
  const shown = name.length > 40 ? `${name.slice(0, 40)}…` : name;
  return structureError(`unknown dtype \`${shown}\`, expected one of ${DTYPES.join(', ')}`, offset, tensor, 'UnknownDtype');
}

interface Dims { dims: readonly number[]; exact: bigint[] | null }

/** Dims are pushed here, then copied at their size (pushing from [] reserves 17 slots per shape). */
const scratchDims: number[] = [];

function decodeShape(c: JsonCursor, tensor: string): Dims {
  const kind = c.peekKind();
  if (kind !== 'array') throw structureError(`invalid type for shape: ${describeKind(kind)}, expected a sequence`, c.offset, tensor);
  c.enterArray();
  const dims = scratchDims;
  dims.length = 0;
  let exact: bigint[] | null = null;
  while (c.nextItem()) {
    const d = readUsize(c, tensor, 'shape');
    if (typeof d === 'bigint' && d > MAX_SAFE) exact ??= dims.map((x) => BigInt(x));
    if (exact) exact.push(BigInt(d));
    dims.push(Number(d));
  }
  return { dims: exact ? dims.slice() : internDims(dims.slice()), exact };
}

/** data_offsets as read: plain numbers when exact (≤ 2^53), else BigInt. */
type Offsets = [number | bigint, number | bigint];

function decodeOffsets(c: JsonCursor, tensor: string): Offsets {
  const kind = c.peekKind();
  const at = c.offset;
  if (kind !== 'array') throw structureError(`invalid type for data_offsets: ${describeKind(kind)}, expected a tuple of size 2`, at, tensor);
  c.enterArray();
  const need = () => {
    if (!c.nextItem()) throw structureError('invalid length, data_offsets must have exactly 2 elements', at, tensor);
    const v = readUsize(c, tensor, 'data_offsets');
    return typeof v === 'bigint' && v <= MAX_SAFE ? Number(v) : v;
  };
  const out: Offsets = [need(), need()];
  if (c.nextItem()) throw structureError('invalid length, data_offsets must have exactly 2 elements', at, tensor);
  return out;
}

function readUsize(c: JsonCursor, tensor: string, field: string): number | bigint {
  const kind = c.peekKind();
  const at = c.offset;
  if (kind !== 'number') throw structureError(`invalid type in ${field}: ${describeKind(kind)}, expected usize`, at, tensor);
  const t: NumberToken = c.readNumber();
  if (t.usize === null) {
    const shown = t.text.length > 30 ? `${t.text.slice(0, 30)}…` : t.text;
    const why = t.serdeType === 'i64' ? `invalid value: integer \`${shown}\`` : `invalid type: \`${shown}\` is not an integer ≤ u64::MAX`;
    throw structureError(`${why} in ${field}, expected usize`, at, tensor);
  }
  return t.usize;
}

// ---------------------------------------------------------------------------------------------
// Layout: `Metadata::validate` plus the final buffer-length check of `read_metadata`.

/**
 * Sorts by (begin, end) and checks, for each tensor in that order (all in exact integers):
 * begins where the previous ended (the first at 0) and end ≥ begin → else InvalidOffset;
 * Π shape (left to right) and × bits fit in u64 → else ValidationOverflow; bits a multiple of 8 →
 * else MisalignedSlice; end − begin = bits / 8 → else TensorInvalidInfo. Finally the data must end
 * exactly at the end of the file: last end + 8 + N = file size → else MetadataIncompleteBuffer.
 */
export function checkLayout(tensors: readonly DeclaredTensor[], headerLength: bigint, fileSize: bigint): DeclaredTensor[] {
  const sorted = tensors.slice().sort(byOffsets);
  let start = 0n;
  for (const t of sorted) {
    const at = { offset: t.entryOffset, tensor: t.name };
    const [begin, end] = exactOffsets(t);
    if (begin !== start || end < begin) {
      const why = end < begin ? `ends (${end}) before it begins (${begin})` : begin > start ? `begins at ${begin}, leaving a gap after ${start} (every data byte must belong to a tensor)` : `begins at ${begin}, overlapping data that ends at ${start}`;
      throw new TensorportError('InvalidOffset', `invalid offset for tensor \`${t.name}\`: data_offsets [${begin}, ${end}] ${why}`, at);
    }
    start = end;
    const elements = elementCountChecked(t);
    const bits = elements === null ? null : elements * BigInt(dtypeBits(t.dtype));
    if (bits === null || bits > U64_MAX) {
      throw new TensorportError('ValidationOverflow', `tensor \`${t.name}\`: overflow computing the byte size of ${t.dtype} shape [${shapeText(t)}] (exceeds u64)`, at);
    }
    if (bits % 8n !== 0n) {
      throw new TensorportError('MisalignedSlice', `tensor \`${t.name}\`: ${t.dtype} shape [${shapeText(t)}] has ${elements} elements = ${bits} bits, not a whole number of bytes`, at);
    }
    if (end - begin !== bits / 8n) {
      throw new TensorportError('TensorInvalidInfo', `tensor \`${t.name}\`: ${t.dtype} shape [${shapeText(t)}] needs ${bits / 8n} bytes but data_offsets [${begin}, ${end}] span ${end - begin}`, at);
    }
  }
  const expected = start + 8n + headerLength;
  if (expected !== fileSize) {
    const detail = expected < fileSize ? `${fileSize - expected} bytes after the last tensor` : `${expected - fileSize} bytes missing`;
    throw new TensorportError('MetadataIncompleteBuffer', `incomplete metadata, file not fully covered: tensors end at byte ${expected} but the file has ${fileSize} bytes (${detail})`, { offset: fileSize < expected ? fileSize : expected });
  }
  return sorted;
}

/** Ascending (begin, end), exactly: numbers unless an offset is beyond 2^53. */
function byOffsets(a: DeclaredTensor, b: DeclaredTensor): number {
  if (a.exactOffsets === undefined && b.exactOffsets === undefined) return a.begin - b.begin || a.end - b.end;
  const [ab, ae] = exactOffsets(a);
  const [bb, be] = exactOffsets(b);
  return ab < bb ? -1 : ab > bb ? 1 : ae < be ? -1 : ae > be ? 1 : 0;
}

function exactOffsets(t: DeclaredTensor): readonly [bigint, bigint] {
  return t.exactOffsets ?? [BigInt(t.begin), BigInt(t.end)];
}

/** Π dims like `try_fold(1, checked_mul)` on u64: null as soon as a partial product overflows. */
function elementCountChecked(t: DeclaredTensor): bigint | null {
  let small = 1;
  let big: bigint | null = null;
  const dims = t.exactShape ?? t.shape;
  for (const d of dims) {
    if (big === null && typeof d === 'number' && small * d <= Number.MAX_SAFE_INTEGER) {
      small *= d;
      continue;
    }
    big = (big ?? BigInt(small)) * BigInt(d);
    if (big > U64_MAX) return null;
  }
  return big ?? BigInt(small);
}

function shapeText(t: DeclaredTensor): string {
  const dims = t.exactShape ?? t.shape;
  const s = dims.slice(0, 8).join(', ');
  return dims.length > 8 ? `${s}, … (${dims.length} dims)` : s;
}
