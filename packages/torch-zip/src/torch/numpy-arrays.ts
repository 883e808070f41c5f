import type { PyObject, PyValue, StorageRef, TensorRecord, UnsupportedRecord } from '../pickle/values.ts';
import { typeName } from '../pickle/values.ts';
import { dtypeInfo, type TorchDtype } from './dtypes.ts';

/**
 * numpy values inside a pickle, decoded by name from their placeholder records (extraction mode;
 * nothing of numpy is imported). Layouts from numpy's C sources (methods.c `array_reduce` /
 * `array_setstate`, descriptor.c `arraydescr_reduce`, scalartypes.c `gentype_reduce`):
 * - array: `_reconstruct(ndarray, (0,), b'b')` + BUILD `(1, shape, dtype, is_fortran, raw)`
 *   (version 0: the same without the leading 1); `raw` is column-major when `is_fortran`, and a
 *   list for object dtypes, which stay refused;
 * - dtype: `dtype('f8', False, True)` + BUILD `(3|4, endian, subarray, names, fields, elsize, alignment, flags[, metadata])`;
 * - scalar: `scalar(dtype, raw)`, the element in the dtype's byte order.
 */
const RECONSTRUCT = new Set(['numpy.core.multiarray._reconstruct', 'numpy._core.multiarray._reconstruct']);
const SCALAR = new Set(['numpy.core.multiarray.scalar', 'numpy._core.multiarray.scalar']);

const KINDS: Readonly<Record<string, TorchDtype>> = {
  b1: 'bool', i1: 'int8', i2: 'int16', i4: 'int32', i8: 'int64', u1: 'uint8', u2: 'uint16', u4: 'uint32', u8: 'uint64',
  f2: 'float16', f4: 'float32', f8: 'float64', c8: 'complex64', c16: 'complex128',
};
/** Dtypes numpy names by their scalar class (`dtype(ml_dtypes.bfloat16, False, True)`). */
const CLASS_DTYPES: Readonly<Record<string, TorchDtype>> = { 'ml_dtypes.bfloat16': 'bfloat16' };

export interface NumpyDtype { readonly dtype: TorchDtype; readonly bigEndian: boolean; readonly str: string; readonly elsize: number }

export function isNumpyArray(v: PyObject): boolean {
  return RECONSTRUCT.has(v.callable) && firstArgName(v) === 'numpy.ndarray';
}
export function isNumpyScalar(v: PyObject): boolean {
  return SCALAR.has(v.callable);
}

function firstArgName(v: PyObject): string | null {
  const a = v.args[0];
  return typeof a === 'object' && a !== null && a.kind === 'global' ? a.name : null;
}

function refused(what: string): UnsupportedRecord {
  return { kind: 'unsupported', what };
}

function soleState(v: PyObject): PyValue | undefined {
  const states = v.foreign?.states ?? [];
  return states.length === 1 ? states[0] : undefined;
}

/** A `numpy.dtype` record, or why it cannot be a tensor dtype. */
export function numpyDtype(v: PyValue): NumpyDtype | string {
  if (typeof v !== 'object' || v === null || v.kind !== 'object' || v.callable !== 'numpy.dtype' || !v.foreign) return `dtype is ${typeName(v)}, not a numpy.dtype record`;
  const [spec] = v.args;
  const state = soleState(v);
  if (typeof state !== 'object' || state === null || state.kind !== 'tuple' || state.items.length < 8) return 'numpy.dtype without its 8- or 9-item state';
  const [, endian, subarray, names, fields] = state.items;
  if (subarray !== null || names !== null || fields !== null) return 'structured or subarray numpy dtype';
  const big = endian === '>';
  let dtype: TorchDtype | undefined;
  let str: string;
  if (typeof spec === 'string') {
    dtype = KINDS[spec];
    str = spec;
  } else if (typeof spec === 'object' && spec !== null && spec.kind === 'global') {
    dtype = CLASS_DTYPES[spec.name];
    str = spec.name;
  } else return `numpy dtype spec is ${typeName(spec ?? null)}`;
  if (dtype === undefined) return `numpy dtype ${str} (object, string, datetime, void or long double) has no tensor dtype`;
  if (endian !== '<' && endian !== '>' && endian !== '|') return `numpy dtype byte order ${String(endian)}`;
  const elsize = dtypeInfo(dtype).bytes;
  return { dtype, bigEndian: big && elsize > 1, str: `${endian}${str}`, elsize };
}

export interface DecodedArray {
  readonly tensor: TensorRecord;
  readonly bytes: Uint8Array;
  readonly bigEndian: boolean;
}

/** An ndarray record as a tensor over its own bytes, or the refusal that names why not. */
export function decodeArray(v: PyObject, key: string): DecodedArray | UnsupportedRecord {
  if (v.args.length !== 3) return refused(`numpy array: _reconstruct takes 3 arguments, got ${v.args.length}`);
  const state = soleState(v);
  if (typeof state !== 'object' || state === null || state.kind !== 'tuple') return refused('numpy array without exactly one state tuple');
  const items = state.items.length === 5 ? state.items.slice(1) : state.items.length === 4 ? state.items : null;
  if (items === null || (state.items.length === 5 && state.items[0] !== 1)) return refused(`numpy array state of ${state.items.length} items`);
  const [shapeV, dtypeV, fortran, raw] = items as [PyValue, PyValue, PyValue, PyValue];
  const d = numpyDtype(dtypeV);
  if (typeof d === 'string') return refused(`numpy array: ${d}`);
  if (typeof raw === 'object' && raw !== null && raw.kind === 'list') return refused('numpy object array (its elements are pickled objects)');
  // protocol 2 pickles b'' as `builtins.bytes()`, a placeholder call with no arguments
  const empty = typeof raw === 'object' && raw !== null && raw.kind === 'object' && raw.callable === 'builtins.bytes' && raw.args.length === 0 && raw.foreign?.states.length === 0;
  const data = empty ? new Uint8Array(0) : typeof raw === 'object' && raw !== null && raw.kind === 'bytes' ? raw.data : null;
  if (data === null) return refused(`numpy array data is ${typeName(raw)}, not bytes`);
  if (typeof fortran !== 'boolean') return refused('numpy array Fortran flag is not a bool');
  if (typeof shapeV !== 'object' || shapeV === null || shapeV.kind !== 'tuple') return refused('numpy array shape is not a tuple');
  const shape: number[] = [];
  let numel = 1;
  for (const s of shapeV.items) {
    if (typeof s !== 'number' || !Number.isSafeInteger(s) || s < 0) return refused('numpy array shape holds a non-integer');
    shape.push(s);
    numel *= s;
  }
  if (!Number.isSafeInteger(numel) || numel * d.elsize !== data.byteLength) {
    return refused(`numpy array of shape (${shape.join(', ')}) × ${d.elsize} bytes holds ${data.byteLength} bytes`);
  }
  // element strides: C order, or column-major when the bytes were written in Fortran order
  const stride = new Array<number>(shape.length);
  let step = 1;
  const order = fortran ? shape.map((_, i) => i) : shape.map((_, i) => shape.length - 1 - i);
  for (const i of order) {
    stride[i] = step;
    step *= Math.max(shape[i]!, 1);
  }
  const storage: StorageRef = { kind: 'storage', key, dtype: d.dtype, location: 'cpu', numel, view: null };
  return { tensor: { kind: 'tensor', storage, dtype: d.dtype, offset: 0, shape, stride, parameter: false }, bytes: data, bigEndian: d.bigEndian };
}

/** A numpy scalar as a report value: numbers for floats and small ints, bigint past 2^53, bools. */
export function decodeScalar(v: PyObject): { dtype: string; value: number | bigint | boolean } | string {
  if (v.args.length !== 2) return `numpy scalar takes 2 arguments, got ${v.args.length}`;
  const d = numpyDtype(v.args[0]!);
  if (typeof d === 'string') return d;
  const raw = v.args[1];
  if (typeof raw !== 'object' || raw === null || raw.kind !== 'bytes' || raw.data.byteLength !== d.elsize) return `numpy scalar data is ${typeName(raw ?? null)}, not ${d.elsize} bytes`;
  const view = new DataView(raw.data.buffer, raw.data.byteOffset, raw.data.byteLength);
  const le = !d.bigEndian;
  const small = (b: bigint): number | bigint => (b >= BigInt(Number.MIN_SAFE_INTEGER) && b <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(b) : b);
  switch (d.dtype) {
    case 'bool': return { dtype: d.str, value: view.getUint8(0) !== 0 };
    case 'int8': return { dtype: d.str, value: view.getInt8(0) };
    case 'uint8': return { dtype: d.str, value: view.getUint8(0) };
    case 'int16': return { dtype: d.str, value: view.getInt16(0, le) };
    case 'uint16': return { dtype: d.str, value: view.getUint16(0, le) };
    case 'int32': return { dtype: d.str, value: view.getInt32(0, le) };
    case 'uint32': return { dtype: d.str, value: view.getUint32(0, le) };
    case 'int64': return { dtype: d.str, value: small(view.getBigInt64(0, le)) };
    case 'uint64': return { dtype: d.str, value: small(view.getBigUint64(0, le)) };
    case 'float32': return { dtype: d.str, value: view.getFloat32(0, le) };
    case 'float64': return { dtype: d.str, value: view.getFloat64(0, le) };
    default: return `numpy ${d.str} scalar is not reported as a number`;
  }
}

/** Synthetic storage keys for arrays: torch's are decimal digits, so these never collide. */
export function arrayKey(n: number): string {
  return `numpy:${n}`;
}
