import { TensorportError, type ByteSource, type CastTarget, type Checkpoint, type Finding, type TensorDescriptor, readChunks } from '@tensorport/core';
import {
  ALIGNMENT_KEY, GGUF_DEFAULT_ALIGNMENT, LITTLE_ENDIAN_HOST, MAX_ARRAY_DEPTH, MAX_ARRAY_ELEMENTS, MAX_DIMS, MAX_HEADER_OBJECTS,
  MAX_STRING_LENGTH, MAX_TENSOR_NAME_BYTES, alignUp,
} from './constants.ts';
import { HeaderCursor } from './cursor.ts';
import { dequantizedDescriptor } from './transform.ts';
import { ggmlTypeById, type GgmlType } from './ggml-types.ts';
import { TYPED_ARRAYS, VALUE_SIZE, VALUE_TYPE_NAMES, valueToString, type GgufArray, type GgufValue, type GgufValueTypeName } from './values.ts';

export interface GgufReadOptions {
  /** Largest string, in bytes (default 2^30, llama.cpp's limit). */
  maxStringLength?: number;
  /** Most elements in one array (default 2^30, llama.cpp's limit). */
  maxArrayElements?: number;
  /** Most strings, booleans and nested arrays in the whole header (default 2^24). */
  maxHeaderObjects?: number;
  /** Longest tensor name in bytes (default 63, llama.cpp's limit). */
  maxTensorNameBytes?: number;
  /** Most dimensions (default 4, llama.cpp's limit). */
  maxDims?: number;
  /** Refuse (GgufTensorOverlap) any layout but llama.cpp's: tensors contiguous in info order. */
  strictLayout?: boolean;
  onWarning?: (f: Finding) => void;
}

export interface GgufTensorInfo {
  readonly name: string;
  /** ggml `ne`: ne[0] varies fastest. */
  readonly dims: readonly number[];
  readonly type: GgmlType;
  /** Relative to the data section, as stored. */
  readonly offset: number;
  /** Where the tensor info record starts in the file. */
  readonly infoOffset: number;
}

/**
 * A GGUF tensor as a descriptor. `shape` is row-major (the reverse of `dims`); for plain element
 * types (F32, F16, BF16, F64, I8…I64) the descriptor is that dtype and shape; for block types it is
 * the raw block bytes as U8 with the last axis in bytes, as gguf-py's reader exposes them.
 */
export interface GgufTensor extends TensorDescriptor {
  readonly ggmlType: GgmlType;
  readonly dims: readonly number[];
  /** Row-major element shape (reversed dims), whatever the storage. */
  readonly logicalShape: readonly number[];
  readonly elements: number;
  /** Absolute file offset of the first byte. */
  readonly fileOffset: number;
  readonly range: { readonly source: ByteSource; readonly offset: number };
}

export interface GgufFile extends Checkpoint {
  readonly format: 'gguf';
  readonly version: 2 | 3;
  readonly alignment: number;
  readonly dataOffset: number;
  /** Every key in file order with its typed value. */
  readonly kv: ReadonlyMap<string, GgufValue>;
  /** `kv` as text (see valueToString), arrays in full; computed on first access. */
  readonly metadata: Map<string, string>;
  readonly tensors: readonly GgufTensor[];
  readonly warnings: readonly Finding[];
  readonly source: ByteSource;
  /** A tensor dequantized (or cast) to F32, F16 or BF16 while streaming; see dequantizedDescriptor. */
  dequantized(t: GgufTensor, to?: CastTarget): TensorDescriptor;
}

const MAGIC = 0x46554747;

/**
 * Parses a GGUF header (v2 or v3, little-endian) and checks every tensor against the file, reading
 * only the header pages. Big-endian files are refused (GgufBigEndian), as llama.cpp does: their
 * quantized payloads keep little-endian scales, so a swap is type-specific and lossy to get wrong.
 */
export async function openGguf(source: ByteSource, options: GgufReadOptions = {}): Promise<GgufFile> {
  if (!LITTLE_ENDIAN_HOST) throw new TensorportError('GgufBigEndian', 'reading GGUF needs a little-endian host');
  const warnings: Finding[] = [];
  const warn = (f: Finding): void => {
    warnings.push(f);
    options.onWarning?.(f);
  };
  const c = new HeaderCursor(source);
  const limits = {
    string: options.maxStringLength ?? MAX_STRING_LENGTH,
    array: options.maxArrayElements ?? MAX_ARRAY_ELEMENTS,
    objects: options.maxHeaderObjects ?? MAX_HEADER_OBJECTS,
  };
  const st = new HeaderState(c, limits);

  await c.need(24, 'the 24-byte GGUF header');
  if (c.u32() !== MAGIC) {
    throw new TensorportError('GgufInvalidMagic', `${source.name}: not a GGUF file (magic is not "GGUF")`, { offset: 0, path: source.name });
  }
  const version = c.u32();
  if (version !== 0 && (version & 0xffff) === 0) {
    throw new TensorportError('GgufBigEndian', `${source.name}: big-endian GGUF (version bytes ${hex32(version)}) is not supported; convert it with gguf_convert_endian.py`, { offset: 4, path: source.name });
  }
  if (version !== 2 && version !== 3) {
    throw new TensorportError('GgufUnsupportedVersion', `${source.name}: GGUF version ${version} is not supported (2 and 3 are)`, { offset: 4, path: source.name });
  }
  const nTensors = st.count(c.u64(), 24, 'tensor count', 8);
  const nKv = st.count(c.u64(), 12, 'metadata key count', 16);

  const kv = new Map<string, GgufValue>();
  for (let i = 0; i < nKv; i++) {
    const at = c.pos;
    const key = await st.string('metadata key', true);
    if (key.length === 0) throw new TensorportError('GgufInvalidKey', `${source.name}: metadata key ${i} is empty`, { offset: at, path: source.name });
    if (kv.has(key)) throw new TensorportError('GgufDuplicateKey', `${source.name}: metadata key ${JSON.stringify(key)} appears twice`, { offset: at, path: source.name });
    await c.need(4, `the type of ${key}`);
    const typeAt = c.pos;
    const type = st.valueType(c.u32(), typeAt, key);
    kv.set(key, await st.value(type, key, 0));
  }

  let alignment = GGUF_DEFAULT_ALIGNMENT;
  const align = kv.get(ALIGNMENT_KEY);
  if (align !== undefined) {
    if (align.type !== 'UINT32' || align.value === 0 || (align.value & (align.value - 1)) !== 0) {
      throw new TensorportError('GgufInvalidAlignment', `${source.name}: ${ALIGNMENT_KEY} must be a UINT32 power of two, got ${align.type} ${valueToString(align)}`, { path: source.name });
    }
    alignment = align.value;
  }

  const maxName = options.maxTensorNameBytes ?? MAX_TENSOR_NAME_BYTES;
  const maxDims = options.maxDims ?? MAX_DIMS;
  const infos: GgufTensorInfo[] = [];
  const names = new Set<string>();
  for (let i = 0; i < nTensors; i++) {
    const infoOffset = c.pos;
    const name = await st.string('tensor name', true);
    const bad = (code: 'GgufInvalidTensorInfo' | 'GgufUnknownType' | 'GgufBlockMismatch' | 'GgufMisalignedOffset', msg: string): TensorportError =>
      new TensorportError(code, `${source.name}: tensor ${JSON.stringify(name)}: ${msg}`, { tensor: name, offset: infoOffset, path: source.name });
    if (name.length === 0) throw bad('GgufInvalidTensorInfo', 'empty name');
    if (new TextEncoder().encode(name).byteLength > maxName) throw bad('GgufInvalidTensorInfo', `name longer than ${maxName} bytes`);
    if (names.has(name)) throw new TensorportError('DuplicateTensorName', `${source.name}: two tensors are named ${JSON.stringify(name)}`, { tensor: name, offset: infoOffset, path: source.name });
    names.add(name);
    await c.need(4, `n_dims of ${name}`);
    const nDims = c.u32();
    if (nDims > maxDims) throw bad('GgufInvalidTensorInfo', `${nDims} dimensions (at most ${maxDims})`);
    await c.need(8 * nDims + 12, `the tensor info of ${name}`);
    const dims: number[] = [];
    let elements = 1n;
    for (let d = 0; d < nDims; d++) {
      const ne = c.u64();
      if (ne >= 2n ** 63n) throw bad('GgufInvalidTensorInfo', `dimension ${d} is ${ne} (negative as int64)`);
      elements *= ne;
      dims.push(Number(ne));
    }
    const typeId = c.u32();
    const offset = c.u64();
    const type = ggmlTypeById(typeId);
    if (!type) throw bad('GgufUnknownType', `unknown ggml type ${typeId}`);
    if (elements > BigInt(Number.MAX_SAFE_INTEGER) || dims.some((d) => !Number.isSafeInteger(d))) {
      throw bad('GgufInvalidTensorInfo', `[${dims.join(', ')}] has more than 2^53 elements`);
    }
    const ne0 = dims[0] ?? 1;
    if (ne0 % type.blockSize !== 0) throw bad('GgufBlockMismatch', `ne[0] = ${ne0} is not a multiple of the ${type.name} block size ${type.blockSize}`);
    if (offset % BigInt(alignment) !== 0n) throw bad('GgufMisalignedOffset', `data offset ${offset} is not a multiple of the alignment ${alignment}`);
    if (offset > BigInt(source.size)) {
      throw new TensorportError('GgufTensorOutOfBounds', `${source.name}: tensor ${JSON.stringify(name)} starts past the end of the file`, { tensor: name, offset: infoOffset, path: source.name });
    }
    infos.push({ name, dims, type, offset: Number(offset), infoOffset });
  }

  const dataOffset = alignUp(c.pos, alignment);
  const tensors = infos.map((info) => tensorDescriptor(source, info, dataOffset));
  checkLayout(source, tensors, infos, dataOffset, alignment, options.strictLayout === true, warn);
  // Built on first use: a vocabulary as JSON text is megabytes that most callers never look at.
  let metadata: Map<string, string> | undefined;
  return {
    format: 'gguf', version, alignment, dataOffset, kv, tensors, warnings, source,
    get metadata(): Map<string, string> {
      if (!metadata) {
        metadata = new Map();
        for (const [k, v] of kv) metadata.set(k, valueToString(v));
      }
      return metadata;
    },
    close: () => source.close(),
    dequantized: (t, to = 'F32') => dequantizedDescriptor(t, to),
  };
}

function hex32(v: number): string {
  return '0x' + v.toString(16).padStart(8, '0');
}

/** Parsing state shared by the value readers: the cursor and the header-wide object budget. */
class HeaderState {
  private objects = 0;
  private readonly utf8 = new TextDecoder('utf-8', { fatal: true });
  constructor(
    private readonly c: HeaderCursor,
    private readonly limits: { string: number; array: number; objects: number },
  ) {}

  private error(code: 'GgufLimitExceeded' | 'GgufInvalidUtf8' | 'GgufInvalidValueType' | 'GgufInvalidValue', msg: string, offset: number): TensorportError {
    return new TensorportError(code, `${this.c.source.name}: ${msg}`, { offset, path: this.c.source.name });
  }

  /** A u64 count whose records (at least `minBytes` each) must fit in the rest of the file. */
  count(n: bigint, minBytes: number, what: string, at: number): number {
    if (n > BigInt(Math.floor(this.c.remaining / minBytes))) {
      throw this.error('GgufLimitExceeded', `${what} ${n} cannot fit in the ${this.c.remaining} bytes after the header`, at);
    }
    return Number(n);
  }

  private spend(n: number, at: number): void {
    this.objects += n;
    if (this.objects > this.limits.objects) throw this.error('GgufLimitExceeded', `more than ${this.limits.objects} strings and arrays in the header (option maxHeaderObjects)`, at);
  }

  valueType(id: number, at: number, key: string): GgufValueTypeName {
    const name = VALUE_TYPE_NAMES[id];
    if (name === undefined) throw this.error('GgufInvalidValueType', `value of ${JSON.stringify(key)} has unknown type ${id}`, at);
    return name;
  }

  /**
   * A string already in the current page, read without an await (vocabularies hold 10^5 of them),
   * or null when it is not (nothing is consumed then).
   */
  stringNow(what: string, strict: boolean): string | null {
    const c = this.c;
    if (!c.has(8)) return null;
    const at = c.pos;
    const n = c.u64();
    if (n > BigInt(this.limits.string)) throw this.error('GgufLimitExceeded', `${what} is ${n} bytes long (limit ${this.limits.string})`, at);
    if (!c.has(Number(n))) {
      c.pos = at;
      return null;
    }
    return this.decode(c.bytes(Number(n)), what, strict, at);
  }

  private decode(bytes: Uint8Array, what: string, strict: boolean, at: number): string {
    // Short ASCII strings (most tokens) skip TextDecoder, whose per-call cost dominates them.
    if (bytes.byteLength <= 32) {
      let ascii = true;
      for (let i = 0; i < bytes.byteLength; i++) if (bytes[i]! >= 0x80) ascii = false;
      if (ascii) return String.fromCharCode(...bytes);
    }
    try {
      return this.utf8.decode(bytes);
    } catch {
      if (strict) throw this.error('GgufInvalidUtf8', `${what} is not valid UTF-8`, at);
      return new TextDecoder('utf-8').decode(bytes);
    }
  }

  async string(what: string, strict: boolean): Promise<string> {
    const at = this.c.pos;
    await this.c.need(8, what);
    const n = this.c.u64();
    if (n > BigInt(this.limits.string)) throw this.error('GgufLimitExceeded', `${what} is ${n} bytes long (limit ${this.limits.string})`, at);
    const len = Number(n);
    await this.c.need(len, what);
    return this.decode(this.c.bytes(len), what, strict, at);
  }

  async value(type: GgufValueTypeName, key: string, depth: number): Promise<GgufValue> {
    const c = this.c;
    const at = c.pos;
    switch (type) {
      case 'STRING':
        this.spend(1, at);
        return { type, value: await this.string(`the value of ${JSON.stringify(key)}`, false) };
      case 'ARRAY':
        return { type, value: await this.array(key, depth + 1) };
      case 'BOOL': {
        await c.need(1, `the value of ${JSON.stringify(key)}`);
        return { type, value: this.bool(at, key) };
      }
      case 'UINT64':
      case 'INT64':
        await c.need(8, `the value of ${JSON.stringify(key)}`);
        return { type, value: type === 'UINT64' ? c.u64() : c.i64() };
      default: {
        await c.need(VALUE_SIZE[type]!, `the value of ${JSON.stringify(key)}`);
        const read = { UINT8: c.u8, INT8: c.i8, UINT16: c.u16, INT16: c.i16, UINT32: c.u32, INT32: c.i32, FLOAT32: c.f32, FLOAT64: c.f64 }[type];
        return { type, value: read.call(c) };
      }
    }
  }

  private bool(at: number, key: string): boolean {
    const b = this.c.u8();
    if (b > 1) throw this.error('GgufInvalidValue', `BOOL in ${JSON.stringify(key)} is ${b} (only 0 and 1 are valid)`, at);
    return b === 1;
  }

  private async array(key: string, depth: number): Promise<GgufArray> {
    const c = this.c;
    const at = c.pos;
    if (depth > MAX_ARRAY_DEPTH) throw this.error('GgufLimitExceeded', `arrays in ${JSON.stringify(key)} nest deeper than ${MAX_ARRAY_DEPTH}`, at);
    await c.need(12, `the array header of ${JSON.stringify(key)}`);
    const elementType = this.valueType(c.u32(), at, key);
    const n64 = c.u64();
    const size = VALUE_SIZE[elementType];
    // Strings take at least 8 bytes (their length), nested arrays 12.
    const minBytes = size ?? (elementType === 'STRING' ? 8 : 12);
    if (n64 > BigInt(this.limits.array)) throw this.error('GgufLimitExceeded', `array ${JSON.stringify(key)} has ${n64} elements (limit ${this.limits.array})`, at);
    const n = Number(n64);
    if (n * minBytes > c.remaining) throw this.error('GgufLimitExceeded', `array ${JSON.stringify(key)} of ${n} ${elementType} cannot fit in the ${c.remaining} bytes left`, at);
    if (size === undefined || elementType === 'BOOL') {
      this.spend(n, at);
      if (elementType === 'BOOL') {
        await c.need(n, `array ${JSON.stringify(key)}`);
        const out: boolean[] = new Array(n);
        for (let i = 0; i < n; i++) out[i] = this.bool(c.pos, key);
        return { elementType, values: out };
      }
      if (elementType === 'STRING') {
        const out: string[] = new Array(n);
        const what = `an element of ${JSON.stringify(key)}`;
        for (let i = 0; i < n; i++) out[i] = this.stringNow(what, false) ?? (await this.string(what, false));
        return { elementType, values: out };
      }
      const out: GgufArray[] = new Array(n);
      for (let i = 0; i < n; i++) out[i] = await this.array(key, depth + 1);
      return { elementType, values: out };
    }
    await c.need(n * size, `array ${JSON.stringify(key)}`);
    // Copy into an own buffer: aligned for the typed array and detached from the page.
    const bytes = c.bytes(n * size).slice();
    const Ctor = TYPED_ARRAYS[elementType as keyof typeof TYPED_ARRAYS];
    return { elementType, values: new Ctor(bytes.buffer, 0, n) };
  }
}

function tensorDescriptor(source: ByteSource, info: GgufTensorInfo, dataOffset: number): GgufTensor {
  const { type, dims, name } = info;
  const logicalShape = dims.slice().reverse();
  const elements = dims.reduce((a, b) => a * b, 1);
  const rows = elements === 0 ? 0 : elements / (dims[0] ?? 1);
  const rowBytes = ((dims[0] ?? 1) / type.blockSize) * type.typeSize;
  const byteLength = rows * rowBytes;
  const fileOffset = dataOffset + info.offset;
  const shape = type.dtype ? logicalShape : [...logicalShape.slice(0, -1), rowBytes];
  return {
    name,
    dtype: type.dtype ?? 'U8',
    shape,
    byteLength,
    ggmlType: type,
    dims,
    logicalShape,
    elements,
    fileOffset,
    range: { source, offset: fileOffset },
    chunks: (chunkSize?: number) => readChunks(source, fileOffset, byteLength, chunkSize),
  };
}

/**
 * Every tensor must lie inside the file and no two may overlap. llama.cpp further requires the
 * tensors to be contiguous in info order (each at the padded end of the previous one): a layout
 * that differs is a warning, or an error with `strictLayout`.
 */
function checkLayout(source: ByteSource, tensors: readonly GgufTensor[], infos: readonly GgufTensorInfo[], dataOffset: number, alignment: number, strict: boolean, warn: (f: Finding) => void): void {
  for (const [i, t] of tensors.entries()) {
    if (!Number.isSafeInteger(t.fileOffset + t.byteLength) || t.fileOffset + t.byteLength > source.size) {
      throw new TensorportError('GgufTensorOutOfBounds', `${source.name}: tensor ${JSON.stringify(t.name)} (${t.byteLength} bytes at ${t.fileOffset}) extends past the end of the file (${source.size} bytes)`, { tensor: t.name, offset: infos[i]!.infoOffset, path: source.name });
    }
  }
  const byOffset = tensors.map((t, i) => i).filter((i) => tensors[i]!.byteLength > 0).sort((a, b) => tensors[a]!.fileOffset - tensors[b]!.fileOffset);
  for (let k = 1; k < byOffset.length; k++) {
    const prev = tensors[byOffset[k - 1]!]!;
    const cur = tensors[byOffset[k]!]!;
    if (cur.fileOffset < prev.fileOffset + prev.byteLength) {
      throw new TensorportError('GgufTensorOverlap', `${source.name}: tensors ${JSON.stringify(prev.name)} and ${JSON.stringify(cur.name)} overlap`, { tensor: cur.name, other: prev.name, offset: infos[byOffset[k]!]!.infoOffset, path: source.name });
    }
  }
  let expected = 0;
  for (const [i, t] of tensors.entries()) {
    if (infos[i]!.offset !== expected) {
      const message = `${source.name}: tensor ${JSON.stringify(t.name)} is at data offset ${infos[i]!.offset}, llama.cpp expects ${expected} (tensors contiguous in info order)`;
      if (strict) throw new TensorportError('GgufTensorOverlap', message, { tensor: t.name, offset: infos[i]!.infoOffset, path: source.name });
      warn({ code: 'GgufNonContiguousLayout', message, tensor: t.name, offset: infos[i]!.infoOffset });
      break;
    }
    expected += alignUp(t.byteLength, alignment);
  }
  void dataOffset;
}
