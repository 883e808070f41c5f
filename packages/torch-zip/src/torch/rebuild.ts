import { internDims } from '@tensorport/core';
import type { Fail, Handler, PyDict, PyGlobal, PyTuple, PyValue, StorageRef, TensorRecord, UnsupportedRecord } from '../pickle/values.ts';
import { depthAbove, depthOf, typeName } from '../pickle/values.ts';
import type { TorchDtype } from './dtypes.ts';

/**
 * What the allowlisted callables "do": each validates its pickled arguments exactly (arity and
 * types) and returns an inert record. Signatures follow torch/_utils.py; `fail` raises a typed error
 * naming the callable and the pickle offset.
 */
export type { Fail, Handler } from '../pickle/values.ts';

function arity(args: readonly PyValue[], min: number, max: number, fail: Fail): void {
  if (args.length < min || args.length > max) {
    fail(min === max ? `takes ${min} arguments, got ${args.length}` : `takes ${min} to ${max} arguments, got ${args.length}`);
  }
}

function count(v: PyValue, what: string, fail: Fail): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) fail(`${what} must be a non-negative integer, got ${typeName(v)} ${String(v)}`);
  return v as number;
}

function counts(v: PyValue, what: string, fail: Fail): readonly number[] {
  if (typeof v !== 'object' || v === null || (v.kind !== 'tuple' && v.kind !== 'list')) fail(`${what} must be a tuple, got ${typeName(v)}`);
  const items = (v as PyTuple).items;
  for (let i = 0; i < items.length; i++) {
    const x = items[i];
    if (typeof x !== 'number' || !Number.isSafeInteger(x) || x < 0) count(x!, `${what}[${i}]`, fail);
  }
  // A tuple's items never change: shared (100,000 tensors, two arrays each). A list's could (a later APPEND on it): copied.
  // One array per distinct shape (core's internDims): 100,000 tensors held 200,000 arrays of two numbers.
  return internDims((v as PyTuple).kind === 'tuple' ? (items as number[]) : (items.slice() as number[]));
}

function bool(v: PyValue, what: string, fail: Fail): boolean {
  if (typeof v !== 'boolean') fail(`${what} must be a bool, got ${typeName(v)}`);
  return v as boolean;
}

function dict(v: PyValue, what: string, fail: Fail): PyDict {
  if (typeof v !== 'object' || v === null || v.kind !== 'dict') fail(`${what} must be a dict, got ${typeName(v)}`);
  return v as PyDict;
}

function storageArg(v: PyValue, fail: Fail): StorageRef {
  if (typeof v !== 'object' || v === null || v.kind !== 'storage') fail(`storage must be a persistent storage reference, got ${typeName(v)}`);
  return v as StorageRef;
}

function dtypeArg(v: PyValue, fail: Fail): TorchDtype {
  if (typeof v !== 'object' || v === null || v.kind !== 'global' || v.entry?.kind !== 'dtype') fail(`dtype must be a torch dtype, got ${typeName(v)}`);
  return ((v as PyGlobal).entry as { dtype: TorchDtype }).dtype;
}

function tensor(storage: StorageRef, dtype: TorchDtype, offset: PyValue, size: PyValue, stride: PyValue, fail: Fail): TensorRecord {
  const shape = counts(size, 'size', fail);
  const strides = counts(stride, 'stride', fail);
  if (shape.length !== strides.length) fail(`size has ${shape.length} dimensions but stride has ${strides.length}`);
  return { kind: 'tensor', storage, dtype, offset: count(offset, 'storage_offset', fail), shape, stride: strides, parameter: false };
}

/** `metadata` (v2/v3, optional last argument) carries the conj/neg bits; data with them set is not the stored bytes. */
function refuseMathBits(metadata: PyValue | undefined, fail: Fail): UnsupportedRecord | null {
  if (metadata === undefined || metadata === null) return null;
  const m = dict(metadata, 'metadata', fail);
  for (const bit of ['conj', 'neg']) {
    if (m.items.get(bit) === true) return { kind: 'unsupported', what: `tensor with the ${bit} bit set` };
  }
  return null;
}

/** `_rebuild_tensor(storage, storage_offset, size, stride)` */
export const rebuildTensor: Handler = (args, fail) => {
  arity(args, 4, 4, fail);
  const storage = storageArg(args[0]!, fail);
  if (storage.dtype === null) fail('an UntypedStorage needs _rebuild_tensor_v3 and a dtype');
  return tensor(storage, storage.dtype!, args[1]!, args[2]!, args[3]!, fail);
};

/** `_rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])` */
export const rebuildTensorV2: Handler = (args, fail) => {
  arity(args, 6, 7, fail);
  bool(args[4]!, 'requires_grad', fail);
  dict(args[5]!, 'backward_hooks', fail);
  const refused = refuseMathBits(args[6], fail);
  const t = rebuildTensor(args.slice(0, 4), fail);
  return refused ?? t;
};

/** `_rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype[, metadata])` */
export const rebuildTensorV3: Handler = (args, fail) => {
  arity(args, 7, 8, fail);
  const storage = storageArg(args[0]!, fail);
  bool(args[4]!, 'requires_grad', fail);
  dict(args[5]!, 'backward_hooks', fail);
  const dtype = dtypeArg(args[6]!, fail);
  if (storage.dtype !== null && storage.dtype !== dtype) fail(`a ${storage.dtype} storage cannot hold a ${dtype} tensor`);
  const refused = refuseMathBits(args[7], fail);
  const t = tensor(storage, dtype, args[1]!, args[2]!, args[3]!, fail);
  return refused ?? t;
};

function asParameter(v: PyValue, fail: Fail): PyValue {
  if (typeof v === 'object' && v !== null && v.kind === 'unsupported') return v;
  if (typeof v !== 'object' || v === null || v.kind !== 'tensor') fail(`data must be a tensor, got ${typeName(v)}`);
  return { ...(v as TensorRecord), parameter: true };
}

/** `_rebuild_parameter(data, requires_grad, backward_hooks)` */
export const rebuildParameter: Handler = (args, fail) => {
  arity(args, 3, 3, fail);
  bool(args[1]!, 'requires_grad', fail);
  return asParameter(args[0]!, fail);
};

/** `_rebuild_parameter_with_state(data, requires_grad, backward_hooks, state)`: the Python attributes in `state` are dropped. */
export const rebuildParameterWithState: Handler = (args, fail) => {
  arity(args, 4, 4, fail);
  bool(args[1]!, 'requires_grad', fail);
  return asParameter(args[0]!, fail);
};

/** `Parameter(data[, requires_grad])`, reached through NEWOBJ. */
export const newParameter: Handler = (args, fail) => {
  arity(args, 1, 2, fail);
  if (args.length === 2) bool(args[1]!, 'requires_grad', fail);
  return asParameter(args[0]!, fail);
};

/** The types `_rebuild_from_type_v2` may restore: anything else is a subclass with its own code. */
const PLAIN_TENSOR_TYPES = new Set(['torch.Tensor', 'torch.nn.parameter.Parameter']);

/** `_rebuild_from_type_v2(func, new_type, args, state)`: only for plain tensors and Parameters; `state` is dropped. */
export const rebuildFromTypeV2: Handler = (args, fail) => {
  arity(args, 4, 4, fail);
  const [func, newType, inner] = args as [PyValue, PyValue, PyValue];
  if (typeof newType !== 'object' || newType === null || newType.kind !== 'global') fail(`new_type must be a class, got ${typeName(newType)}`);
  const type = (newType as PyGlobal).name;
  if (!PLAIN_TENSOR_TYPES.has(type)) return { kind: 'unsupported', what: `tensor subclass ${type}` };
  if (typeof func !== 'object' || func === null || func.kind !== 'global' || func.entry?.kind !== 'call' || !TENSOR_REBUILDERS.has(func.entry.call)) {
    fail(`func must be a tensor rebuild function, got ${typeName(func)}`);
  }
  if (typeof inner !== 'object' || inner === null || inner.kind !== 'tuple') fail(`args must be a tuple, got ${typeName(inner)}`);
  const built = ((func as PyGlobal).entry as { call: Handler }).call((inner as PyTuple).items, fail);
  return type === 'torch.nn.parameter.Parameter' ? asParameter(built, fail) : built;
};

const TENSOR_REBUILDERS = new Set<Handler>([rebuildTensor, rebuildTensorV2, rebuildTensorV3, rebuildParameter, rebuildParameterWithState]);

function pairsInto(target: PyDict, v: PyValue, fail: Fail): void {
  if (typeof v !== 'object' || v === null || (v.kind !== 'list' && v.kind !== 'tuple')) fail(`expects a list of pairs, got ${typeName(v)}`);
  for (const pair of (v as PyTuple).items) {
    if (typeof pair !== 'object' || pair === null || pair.kind !== 'tuple' || pair.items.length !== 2) fail('expects (key, value) pairs');
    const [k, val] = (pair as PyTuple).items as [PyValue, PyValue];
    target.items.set(k, val);
    target.depth = Math.max(target.depth, depthOf(val) + 1, depthOf(k) + 1);
  }
}

/** `OrderedDict()` / `Counter()`, optionally with a list of pairs; items usually arrive by SETITEMS. */
export const newDict: Handler = (args, fail) => {
  arity(args, 0, 1, fail);
  const d: PyDict = { kind: 'dict', items: new Map(), depth: 1, attrs: null };
  if (args.length === 1) pairsInto(d, args[0]!, fail);
  return d;
};

/** `torch.Size((d0, d1, ...))` is a tuple. */
export const newSize: Handler = (args, fail) => {
  arity(args, 1, 1, fail);
  const dims = counts(args[0]!, 'torch.Size', fail);
  return { kind: 'tuple', items: dims, depth: 1 };
};

/** `torch.device('cuda', 0)` or `torch.device('cpu')` → its string form. */
export const newDevice: Handler = (args, fail) => {
  arity(args, 1, 2, fail);
  const [type, index] = args;
  if (typeof type !== 'string') fail(`device type must be a str, got ${typeName(type!)}`);
  return index === undefined || index === null ? (type as string) : `${type as string}:${count(index, 'device index', fail)}`;
};

/** `_codecs.encode(text, 'latin1')`: how protocol 2 pickles `bytes`. Any other codec is refused. */
export const codecsEncode: Handler = (args, fail) => {
  arity(args, 1, 2, fail);
  const [text, codec] = args;
  if (typeof text !== 'string') fail(`text must be a str, got ${typeName(text!)}`);
  if (codec !== 'latin1' && codec !== 'latin-1') fail(`only the latin1 codec is supported, got ${String(codec)}`);
  const s = text as string;
  const data = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c > 0xff) fail('text is not latin1');
    data[i] = c;
  }
  return { kind: 'bytes', data };
};

function iterableItems(v: PyValue | undefined, fail: Fail): PyValue[] {
  if (v === undefined) return [];
  if (typeof v !== 'object' || v === null || (v.kind !== 'list' && v.kind !== 'tuple' && v.kind !== 'set')) fail(`expects a list, tuple or set, got ${typeName(v ?? null)}`);
  return [...(v as PyTuple).items];
}

export const newSet: Handler = (args, fail) => {
  arity(args, 0, 1, fail);
  const items = iterableItems(args[0], fail);
  return { kind: 'set', items, frozen: false, depth: depthAbove(items) };
};

export const newFrozenset: Handler = (args, fail) => {
  const s = newSet(args, fail) as { items: PyValue[]; depth: number };
  return { kind: 'set', items: s.items, frozen: true, depth: s.depth };
};

/** `bytearray()`, `bytearray(b'...')` or `bytearray('text', 'latin1')`. */
export const newBytearray: Handler = (args, fail) => {
  arity(args, 0, 2, fail);
  if (args.length === 0) return { kind: 'bytes', data: new Uint8Array(0) };
  const [src] = args;
  if (typeof src === 'object' && src !== null && src.kind === 'bytes' && args.length === 1) return src;
  return codecsEncode(args, fail);
};

/** `complex(real, imag)`: kept as an inert record. */
export const newComplex: Handler = (args, fail) => {
  arity(args, 0, 2, fail);
  return { kind: 'object', callable: 'builtins.complex', args: [...args], depth: 1 };
};

/** Torch can rebuild it, safetensors cannot hold it: an inert marker the reader refuses by tensor name. */
export function refuse(what: string): Handler {
  return () => ({ kind: 'unsupported', what });
}
