/** GGUF metadata value types (gguf.h `enum gguf_type`). */
export const GGUF_VALUE_TYPES = {
  UINT8: 0, INT8: 1, UINT16: 2, INT16: 3, UINT32: 4, INT32: 5, FLOAT32: 6, BOOL: 7, STRING: 8, ARRAY: 9, UINT64: 10, INT64: 11, FLOAT64: 12,
} as const;

export type GgufValueTypeName = keyof typeof GGUF_VALUE_TYPES;
export type GgufNumberType = 'UINT8' | 'INT8' | 'UINT16' | 'INT16' | 'UINT32' | 'INT32' | 'FLOAT32' | 'FLOAT64';
export type GgufBigIntType = 'UINT64' | 'INT64';

export const VALUE_TYPE_NAMES: readonly GgufValueTypeName[] = Object.keys(GGUF_VALUE_TYPES) as GgufValueTypeName[];

/** Bytes of one fixed-size value; STRING and ARRAY have none. */
export const VALUE_SIZE: Readonly<Partial<Record<GgufValueTypeName, number>>> = {
  UINT8: 1, INT8: 1, UINT16: 2, INT16: 2, UINT32: 4, INT32: 4, FLOAT32: 4, BOOL: 1, UINT64: 8, INT64: 8, FLOAT64: 8,
};

/**
 * The elements of an array value: numeric arrays are typed arrays (little-endian host order),
 * 64-bit integers BigInt arrays, BOOL a boolean[], STRING a string[], nested arrays GgufArray[].
 */
export type GgufArrayValues =
  | Uint8Array | Int8Array | Uint16Array | Int16Array | Uint32Array | Int32Array | Float32Array | Float64Array
  | BigUint64Array | BigInt64Array | boolean[] | string[] | GgufArray[];

export interface GgufArray {
  readonly elementType: GgufValueTypeName;
  readonly values: GgufArrayValues;
}

/** One typed metadata value, as stored: the type is kept so a file can be written back identically. */
export type GgufValue =
  | { readonly type: GgufNumberType; readonly value: number }
  | { readonly type: GgufBigIntType; readonly value: bigint }
  | { readonly type: 'BOOL'; readonly value: boolean }
  | { readonly type: 'STRING'; readonly value: string }
  | { readonly type: 'ARRAY'; readonly value: GgufArray };

/** Typed-array constructors for numeric element types. */
export const TYPED_ARRAYS = {
  UINT8: Uint8Array, INT8: Int8Array, UINT16: Uint16Array, INT16: Int16Array, UINT32: Uint32Array, INT32: Int32Array,
  FLOAT32: Float32Array, FLOAT64: Float64Array, UINT64: BigUint64Array, INT64: BigInt64Array,
} as const;

// Constructors for values, so callers state the GGUF type explicitly (JS numbers carry none).
export const gguf = {
  u8: (value: number): GgufValue => ({ type: 'UINT8', value }),
  i8: (value: number): GgufValue => ({ type: 'INT8', value }),
  u16: (value: number): GgufValue => ({ type: 'UINT16', value }),
  i16: (value: number): GgufValue => ({ type: 'INT16', value }),
  u32: (value: number): GgufValue => ({ type: 'UINT32', value }),
  i32: (value: number): GgufValue => ({ type: 'INT32', value }),
  f32: (value: number): GgufValue => ({ type: 'FLOAT32', value }),
  f64: (value: number): GgufValue => ({ type: 'FLOAT64', value }),
  u64: (value: bigint | number): GgufValue => ({ type: 'UINT64', value: BigInt(value) }),
  i64: (value: bigint | number): GgufValue => ({ type: 'INT64', value: BigInt(value) }),
  bool: (value: boolean): GgufValue => ({ type: 'BOOL', value }),
  str: (value: string): GgufValue => ({ type: 'STRING', value }),
  array: (elementType: GgufValueTypeName, values: GgufArrayValues): GgufValue => ({ type: 'ARRAY', value: { elementType, values } }),
  strings: (values: string[]): GgufValue => ({ type: 'ARRAY', value: { elementType: 'STRING', values } }),
};

/** The shortest decimal that reads back as the same float32 (what numpy prints for a float32). */
export function float32String(x: number): string {
  if (!Number.isFinite(x)) return Number.isNaN(x) ? 'nan' : x > 0 ? 'inf' : '-inf';
  for (let p = 1; p < 9; p++) {
    const s = x.toPrecision(p);
    if (Math.fround(Number(s)) === x) return String(Number(s));
  }
  return String(x);
}

function scalarJson(type: GgufValueTypeName, v: unknown): string {
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'string') return JSON.stringify(v);
  const n = v as number;
  if (!Number.isFinite(n)) return JSON.stringify(float32String(n));
  return type === 'FLOAT32' ? float32String(n) : String(n);
}

function arrayJson(a: GgufArray, limit: number): string {
  const parts: string[] = [];
  const values = a.values as ArrayLike<unknown>;
  const n = Math.min(values.length, limit);
  for (let i = 0; i < n; i++) {
    const v = values[i];
    parts.push(a.elementType === 'ARRAY' ? arrayJson(v as GgufArray, limit) : scalarJson(a.elementType, v));
  }
  return '[' + parts.join(',') + (values.length > limit ? `,"… ${values.length - limit} more"` : '') + ']';
}

/**
 * A value as text: scalars in decimal (float32 as its shortest round-trip decimal), strings as
 * they are, arrays as JSON (64-bit integers unquoted). With `maxArrayElements`, longer arrays end
 * with a `"… N more"` marker.
 */
export function valueToString(v: GgufValue, maxArrayElements = Infinity): string {
  switch (v.type) {
    case 'STRING':
      return v.value;
    case 'ARRAY':
      return arrayJson(v.value, maxArrayElements);
    case 'FLOAT32':
    case 'FLOAT64':
      return Number.isFinite(v.value) ? (v.type === 'FLOAT32' ? float32String(v.value) : String(v.value)) : float32String(v.value);
    default:
      return String(v.value);
  }
}
