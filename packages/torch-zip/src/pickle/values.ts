import type { TorchDtype } from '../torch/dtypes.ts';

/**
 * What the interpreter builds: inert data only. Python ints are `number` when exact in a double,
 * `bigint` otherwise; floats are boxed so an int argument can be told from a float one. Containers
 * are shared by reference (memo GETs never copy) and carry their nesting depth so the interpreter
 * can refuse deep structures without walking them.
 */
export type PyValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | PyFloat
  | PyBytes
  | PyTuple
  | PyList
  | PyDict
  | PySet
  | PyGlobal
  | PyObject
  | StorageRef
  | TensorRecord
  | UnsupportedRecord;

export interface PyFloat { readonly kind: 'float'; readonly value: number }
export interface PyBytes { readonly kind: 'bytes'; readonly data: Uint8Array }
export interface PyTuple { readonly kind: 'tuple'; readonly items: readonly PyValue[]; depth: number }
export interface PyList { readonly kind: 'list'; readonly items: PyValue[]; depth: number }
/** A dict or OrderedDict. A Map keeps keys such as `__proto__` as plain data, in insertion order. */
export interface PyDict {
  readonly kind: 'dict';
  readonly items: Map<PyValue, PyValue>;
  depth: number;
  /** Instance attributes set by BUILD (a state dict's `_metadata`). */
  attrs: PyDict | null;
}
export interface PySet { readonly kind: 'set'; readonly items: PyValue[]; readonly frozen: boolean; depth: number }

/** Raises a typed error naming the callable and the pickle offset. */
export type Fail = (message: string) => never;
/** What an allowed callable "does": checks its pickled arguments and returns an inert record. */
export type Handler = (args: readonly PyValue[], fail: Fail) => PyValue;

/**
 * What a global resolver says a `module.name` stands for (the interpreter knows no names itself:
 * the resolver is its allowlist). `call`: REDUCE/NEWOBJ run the handler; `dtype`, `storage`: values;
 * `type`: a class that only appears as an argument.
 */
export type GlobalEntry =
  | { readonly kind: 'call'; readonly call: Handler }
  | { readonly kind: 'dtype'; readonly dtype: TorchDtype }
  | { readonly kind: 'storage'; readonly dtype: TorchDtype | null }
  | { readonly kind: 'type' }
  /** Extraction mode: a foreign name kept as a name; calls on it build `PyObject` records with `foreign` state. */
  | { readonly kind: 'placeholder' };

/** A global resolver: the entry for an allowed `module.name`, undefined for every other name. */
export type GlobalResolver = (qualified: string) => GlobalEntry | undefined;

/** A GLOBAL: a name, never resolved to anything callable. `entry` is null (disallowed) only in scan mode. */
export interface PyGlobal {
  readonly kind: 'global';
  /** `module.name`, with Python 2 module names mapped to Python 3 ones. */
  readonly name: string;
  readonly entry: GlobalEntry | null;
}

/**
 * The inert record of a call the interpreter did not evaluate: a disallowed callable in scan mode,
 * or an allowed value type with no data meaning for us (`builtins.complex`).
 */
export interface PyObject {
  readonly kind: 'object';
  readonly callable: string;
  readonly args: readonly PyValue[];
  depth: number;
  /** Set only on a call to a placeholder global: what later opcodes gave the record (nothing ran). */
  readonly foreign?: ForeignState;
}

/** What pickle would have handed a foreign object, recorded instead of applied. */
export interface ForeignState {
  /** The opcode that made it: reduce, newobj, newobj_ex, inst or obj. */
  readonly via: string;
  /** What was called: the placeholder global, or another record (a bound method from getattr). */
  readonly callee: PyValue;
  /** NEWOBJ_EX keyword arguments. */
  kwargs: PyValue | null;
  /** BUILD states in order (a second BUILD is legal pickle). */
  readonly states: PyValue[];
  /** SETITEM(S) on it (dict subclasses) and APPEND(S) (list subclasses), as pickle would pass them. */
  readonly dictItems: Array<readonly [PyValue, PyValue]>;
  readonly listItems: PyValue[];
  /** Pickle offset of the call, for messages. */
  readonly offset: number;
}

/** A persistent id `('storage', type, key, location, numel[, view])`: bytes kept elsewhere. */
export interface StorageRef {
  readonly kind: 'storage';
  readonly key: string;
  /** The element type the storage class declares; `null` for `UntypedStorage` (bytes). */
  readonly dtype: TorchDtype | null;
  readonly location: string;
  /** Elements of `dtype`, or bytes when untyped. */
  readonly numel: number;
  /** Legacy files only: this storage is elements `[offset, offset + size)` of storage `key`. */
  readonly view: { readonly offset: number; readonly size: number } | null;
}

/** A dense tensor as `_rebuild_tensor*` describes it: offset and strides in elements. */
export interface TensorRecord {
  readonly kind: 'tensor';
  readonly storage: StorageRef;
  readonly dtype: TorchDtype;
  readonly offset: number;
  readonly shape: readonly number[];
  readonly stride: readonly number[];
  readonly parameter: boolean;
}

/** A tensor torch can rebuild but safetensors cannot hold (quantized, sparse, meta, ...). */
export interface UnsupportedRecord {
  readonly kind: 'unsupported';
  readonly what: string;
}

export function isContainer(v: PyValue): v is PyTuple | PyList | PyDict | PySet | PyObject {
  return typeof v === 'object' && v !== null && 'depth' in v;
}

export function depthOf(v: PyValue): number {
  return isContainer(v) ? v.depth : 0;
}

/** 1 + the deepest item: a loop, since spreading a large array into Math.max overflows the JS stack. */
export function depthAbove(items: Iterable<PyValue>): number {
  let d = 0;
  for (const v of items) d = Math.max(d, depthOf(v));
  return d + 1;
}

/** A short type name for messages. */
export function typeName(v: PyValue): string {
  if (v === null) return 'None';
  switch (typeof v) {
    case 'boolean': return 'bool';
    case 'number': case 'bigint': return 'int';
    case 'string': return 'str';
    default:
      if (v.kind === 'global') return `global ${v.name}`;
      if (v.kind === 'object') return `${v.callable}(...)`;
      return v.kind;
  }
}

export function isInt(v: PyValue): v is number | bigint {
  return typeof v === 'number' || typeof v === 'bigint';
}
