import { TensorportError, abortQuietly, tensorsInOrder, type ByteSink, type DType, type TensorDescriptor } from '@tensorport/core';
import { ALIGNMENT_KEY, GGUF_DEFAULT_ALIGNMENT, GGUF_MAGIC, GGUF_VERSION, MAX_DIMS, MAX_TENSOR_NAME_BYTES, alignUp } from './constants.ts';
import { GGML_TYPES, ggmlTypeByName, type GgmlType } from './ggml-types.ts';
import { HeaderWriter, isAscii } from './header-writer.ts';
import { GGUF_VALUE_TYPES, TYPED_ARRAYS, VALUE_SIZE, type GgufArray, type GgufValue, type GgufValueTypeName } from './values.ts';

/**
 * A tensor to write: its bytes (`chunks`, `byteLength`) in ggml type `ggmlType`, with the row-major
 * element shape `logicalShape` (written reversed as GGUF dims). A GgufTensor from openGguf has both;
 * a plain F32/F16/BF16/F64/I8…I64 descriptor may omit them (its dtype and shape are used).
 */
export type GgufWriteTensor = TensorDescriptor & { readonly ggmlType?: GgmlType | string; readonly logicalShape?: readonly number[] };

export type GgufMetadataInput = ReadonlyMap<string, GgufValue> | Iterable<readonly [string, GgufValue]>;

export interface GgufWriteOptions {
  /** Data alignment; written as general.alignment when it is not 32 and the key is absent. */
  alignment?: number;
  /** Allow arrays of arrays (gguf-py reads them; llama.cpp refuses the file). Default false. */
  allowNestedArrays?: boolean;
  chunkSize?: number;
  onProgress?(bytesDone: number, total: number): void;
}

export interface GgufPlan {
  readonly header: Uint8Array;
  readonly alignment: number;
  /** Data-section offset of each tensor, in input order. */
  readonly offsets: readonly number[];
  readonly total: number;
}

const BY_DTYPE = new Map<DType, GgmlType>(GGML_TYPES.filter((t) => t.dtype).map((t) => [t.dtype!, t]));

interface Resolved {
  readonly tensor: TensorDescriptor;
  readonly type: GgmlType;
  readonly shape: readonly number[];
}

function resolveTensor(t: GgufWriteTensor): Resolved {
  const bad = (msg: string): TensorportError => new TensorportError('GgufInvalidTensorInfo', `tensor ${JSON.stringify(t.name)}: ${msg}`, { tensor: t.name });
  const type = t.ggmlType === undefined ? BY_DTYPE.get(t.dtype) : typeof t.ggmlType === 'string' ? ggmlTypeByName(t.ggmlType) : t.ggmlType;
  if (!type) throw new TensorportError('GgufUnknownType', `tensor ${JSON.stringify(t.name)}: no ggml type for ${t.ggmlType === undefined ? `dtype ${t.dtype}` : String(typeof t.ggmlType === 'string' ? t.ggmlType : t.ggmlType.name)}`, { tensor: t.name });
  const shape = t.logicalShape ?? (t.ggmlType === undefined ? t.shape : undefined);
  if (!shape) throw bad(`a ${type.name} tensor needs its logicalShape`);
  if (shape.length > MAX_DIMS) throw bad(`${shape.length} dimensions (llama.cpp reads at most ${MAX_DIMS})`);
  if (!shape.every((d) => Number.isSafeInteger(d) && d >= 0)) throw bad(`invalid shape [${shape.join(', ')}]`);
  const ne0 = shape.length ? shape[shape.length - 1]! : 1;
  if (ne0 % type.blockSize !== 0) throw new TensorportError('GgufBlockMismatch', `tensor ${JSON.stringify(t.name)}: last dimension ${ne0} is not a multiple of the ${type.name} block size ${type.blockSize}`, { tensor: t.name });
  const elements = shape.reduce((a, b) => a * b, 1);
  const expected = (elements / type.blockSize) * type.typeSize;
  if (t.byteLength !== expected) {
    throw new TensorportError('TensorByteLengthMismatch', `tensor ${JSON.stringify(t.name)}: ${type.name} [${shape.join(', ')}] needs ${expected} bytes, descriptor says ${t.byteLength}`, { tensor: t.name });
  }
  return { tensor: t, type, shape };
}

/** The whole header (through the padding before the data) and where every tensor goes. */
export function planGguf(tensors: readonly GgufWriteTensor[], metadata: GgufMetadataInput, options: GgufWriteOptions = {}): GgufPlan {
  const kv = new Map<string, GgufValue>();
  for (const [k, v] of metadata) {
    if (typeof k !== 'string' || k.length === 0) throw new TensorportError('GgufInvalidKey', `metadata key ${JSON.stringify(k)} is not a non-empty string`);
    if (kv.has(k)) throw new TensorportError('GgufDuplicateKey', `metadata key ${JSON.stringify(k)} given twice`);
    kv.set(k, v);
  }
  let alignment = options.alignment ?? GGUF_DEFAULT_ALIGNMENT;
  const given = kv.get(ALIGNMENT_KEY);
  if (given !== undefined) {
    if (given.type !== 'UINT32') throw new TensorportError('GgufInvalidAlignment', `${ALIGNMENT_KEY} must be UINT32, got ${given.type}`);
    if (options.alignment !== undefined && options.alignment !== given.value) {
      throw new TensorportError('GgufInvalidAlignment', `option alignment ${options.alignment} contradicts ${ALIGNMENT_KEY} = ${given.value}`);
    }
    alignment = given.value;
  } else if (alignment !== GGUF_DEFAULT_ALIGNMENT) {
    kv.set(ALIGNMENT_KEY, { type: 'UINT32', value: alignment });
  }
  if (!Number.isInteger(alignment) || alignment <= 0 || alignment > 2 ** 31 || (alignment & (alignment - 1)) !== 0) {
    throw new TensorportError('GgufInvalidAlignment', `alignment ${alignment} is not a power of two`);
  }

  const w = new HeaderWriter();
  w.bytes(GGUF_MAGIC);
  w.u32(GGUF_VERSION);
  w.u64(tensors.length);
  w.u64(kv.size);
  for (const [k, v] of kv) {
    checkString(k, `metadata key ${JSON.stringify(k)}`);
    w.string(k);
    w.u32(GGUF_VALUE_TYPES[v.type]);
    writeValue(w, v.type, v.value, k, 0, options.allowNestedArrays === true);
  }
  const names = new Set<string>();
  const offsets: number[] = [];
  let offset = 0;
  for (const t of tensors) {
    const r = resolveTensor(t);
    checkString(t.name, `tensor name ${JSON.stringify(t.name)}`, t.name);
    const nameBytes = new TextEncoder().encode(t.name).byteLength;
    if (nameBytes === 0 || nameBytes > MAX_TENSOR_NAME_BYTES) {
      throw new TensorportError('GgufInvalidTensorInfo', `tensor name ${JSON.stringify(t.name)} must be 1 to ${MAX_TENSOR_NAME_BYTES} bytes (llama.cpp's limit)`, { tensor: t.name });
    }
    if (names.has(t.name)) throw new TensorportError('DuplicateTensorName', `two tensors are named ${JSON.stringify(t.name)}`, { tensor: t.name });
    names.add(t.name);
    w.string(t.name);
    w.u32(r.shape.length);
    for (let i = r.shape.length - 1; i >= 0; i--) w.u64(r.shape[i]!);
    w.u32(r.type.id);
    w.u64(offset);
    offsets.push(offset);
    offset += alignUp(t.byteLength, alignment);
    if (!Number.isSafeInteger(offset)) throw new TensorportError('ValidationOverflow', 'total tensor size exceeds 2^53 bytes', { tensor: t.name });
  }
  w.zeros(alignUp(w.length, alignment) - w.length);
  const header = w.result();
  return { header, alignment, offsets, total: header.byteLength + offset };
}

/**
 * Writes a GGUF v3 file laid out as gguf-py's GGUFWriter does (metadata in the given order, tensor
 * infos and data in input order, each tensor zero-padded to the alignment, the last one too), then
 * commits the sink; on error the sink is aborted. Tensors stream: memory is the header plus a chunk.
 */
export async function writeGguf(tensors: readonly GgufWriteTensor[], metadata: GgufMetadataInput, sink: ByteSink, options: GgufWriteOptions = {}): Promise<{ bytes: number }> {
  try {
    const plan = planGguf(tensors, metadata, options);
    let done = 0;
    const put = async (b: Uint8Array): Promise<void> => {
      if (b.byteLength === 0) return;
      await sink.write(b);
      done += b.byteLength;
      options.onProgress?.(done, plan.total);
    };
    await put(plan.header);
    let zeros = new Uint8Array(0);
    for await (const [t, chunks] of tensorsInOrder(tensors, options.chunkSize)) {
      for await (const c of chunks) await put(c);
      const pad = alignUp(t.byteLength, plan.alignment) - t.byteLength;
      if (zeros.byteLength < pad) zeros = new Uint8Array(plan.alignment);
      await put(zeros.subarray(0, pad));
    }
    if (done !== plan.total) throw new TensorportError('TensorByteLengthMismatch', `wrote ${done} bytes, planned ${plan.total}`);
    await sink.commit();
    return { bytes: plan.total };
  } catch (e) {
    await abortQuietly(sink);
    throw e;
  }
}

const LONE_SURROGATE = /\p{Cs}/u;

function checkString(s: string, what: string, tensor?: string): void {
  if (typeof s !== 'string') throw new TensorportError('GgufInvalidValue', `${what} is not a string`, tensor === undefined ? {} : { tensor });
  if (LONE_SURROGATE.test(s)) throw new TensorportError('GgufInvalidUtf8', `${what} contains a lone surrogate, which UTF-8 cannot encode`, tensor === undefined ? {} : { tensor });
}

const INT_RANGE: Readonly<Partial<Record<GgufValueTypeName, readonly [number, number]>>> = {
  UINT8: [0, 255], INT8: [-128, 127], UINT16: [0, 65535], INT16: [-32768, 32767], UINT32: [0, 2 ** 32 - 1], INT32: [-(2 ** 31), 2 ** 31 - 1],
};

function writeScalar(w: HeaderWriter, type: GgufValueTypeName, v: unknown, key: string): void {
  const bad = (): TensorportError => new TensorportError('GgufInvalidValue', `metadata ${JSON.stringify(key)}: ${typeof v === 'bigint' ? `${v}n` : JSON.stringify(v)} is not a valid ${type}`);
  const range = INT_RANGE[type];
  if (range) {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < range[0] || v > range[1]) throw bad();
  }
  switch (type) {
    case 'UINT8': return w.u8(v as number);
    case 'INT8': return w.i8(v as number);
    case 'UINT16': return w.u16(v as number);
    case 'INT16': return w.i16(v as number);
    case 'UINT32': return w.u32(v as number);
    case 'INT32': return w.i32(v as number);
    case 'FLOAT32':
    case 'FLOAT64':
      if (typeof v !== 'number') throw bad();
      return type === 'FLOAT32' ? w.f32(v) : w.f64(v);
    case 'UINT64':
    case 'INT64': {
      if (typeof v !== 'bigint') throw bad();
      const ok = type === 'UINT64' ? v >= 0n && v < 2n ** 64n : v >= -(2n ** 63n) && v < 2n ** 63n;
      if (!ok) throw bad();
      return type === 'UINT64' ? w.u64(v) : w.i64(v);
    }
    case 'BOOL':
      if (typeof v !== 'boolean') throw bad();
      return w.u8(v ? 1 : 0);
    case 'STRING':
      if (typeof v !== 'string') throw bad();
      checkString(v, `metadata ${JSON.stringify(key)}`);
      return w.string(v);
    default:
      throw bad();
  }
}

function writeValue(w: HeaderWriter, type: GgufValueTypeName, v: unknown, key: string, depth: number, nested: boolean): void {
  if (!(type in GGUF_VALUE_TYPES)) throw new TensorportError('GgufInvalidValueType', `metadata ${JSON.stringify(key)}: unknown value type ${JSON.stringify(type)}`);
  if (type !== 'ARRAY') return writeScalar(w, type, v, key);
  const a = v as GgufArray;
  if (!a || typeof a !== 'object' || !(a.elementType in GGUF_VALUE_TYPES) || typeof (a.values as { length?: unknown })?.length !== 'number') {
    throw new TensorportError('GgufInvalidValue', `metadata ${JSON.stringify(key)}: an ARRAY value is { elementType, values }`);
  }
  if (a.elementType === 'ARRAY' && !(nested && depth < 7)) {
    throw new TensorportError('GgufInvalidValue', `metadata ${JSON.stringify(key)}: arrays of arrays are refused by llama.cpp (option allowNestedArrays)`);
  }
  const values = a.values as ArrayLike<unknown>;
  w.u32(GGUF_VALUE_TYPES[a.elementType]);
  w.u64(values.length);
  const size = VALUE_SIZE[a.elementType];
  // Typed arrays of the matching type are copied as bytes (NaN payloads kept).
  if (size !== undefined && ArrayBuffer.isView(values) && matchesTyped(a.elementType, values)) {
    const view = values as unknown as ArrayBufferView;
    w.bytes(new Uint8Array(view.buffer, view.byteOffset, view.byteLength));
    return;
  }
  if (a.elementType === 'STRING') {
    for (let i = 0; i < values.length; i++) {
      const v = values[i];
      if (typeof v !== 'string') throw new TensorportError('GgufInvalidValue', `metadata ${JSON.stringify(key)}: element ${i} is not a string`);
      if (!isAscii(v)) checkString(v, `element ${i} of metadata ${JSON.stringify(key)}`);
      w.string(v);
    }
    return;
  }
  for (let i = 0; i < values.length; i++) writeValue(w, a.elementType, values[i], key, depth + 1, nested);
}

function matchesTyped(type: GgufValueTypeName, v: ArrayLike<unknown>): boolean {
  const ctor = TYPED_ARRAYS[type as keyof typeof TYPED_ARRAYS];
  return ctor !== undefined && v instanceof ctor;
}
