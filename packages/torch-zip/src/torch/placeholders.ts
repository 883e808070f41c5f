import type { GlobalEntry, GlobalResolver, Handler, PyValue } from '../pickle/values.ts';
import { isContainer } from '../pickle/values.ts';
import { lookupGlobal } from './allowlist.ts';

/**
 * The extraction mode's global resolver: allowlisted names keep their handlers, every other name
 * becomes an inert placeholder (the interpreter turns calls on it into records; nothing is run).
 * Tensor rebuilds stay exact: one whose arguments hold a foreign record, or whose Python-attribute
 * state could replace its data, becomes a refused tensor instead of a guess.
 */
const PLACEHOLDER: GlobalEntry = { kind: 'placeholder' };

/** Callables whose result is tensor data: a foreign value among their arguments means foreign code shaped it. */
const TENSOR_BUILDERS = new Set([
  'torch._utils._rebuild_tensor',
  'torch._utils._rebuild_tensor_v2',
  'torch._utils._rebuild_tensor_v3',
  'torch._utils._rebuild_parameter',
  'torch._utils._rebuild_parameter_with_state',
  'torch._tensor._rebuild_from_type_v2',
  'torch.nn.parameter.Parameter',
]);

/**
 * torch applies a tensor's attribute state with `setattr` (`torch/_utils.py` `_set_obj_state`):
 * these names are properties that write the tensor's data, so such a state changes what loads.
 */
const DATA_SETTERS = new Set(['data', 'real', 'imag']);

/** The first foreign name inside `v`, looking two levels down (arguments and their tuples). */
function foreignIn(v: PyValue, depth = 0): string | null {
  if (typeof v !== 'object' || v === null) return null;
  if (v.kind === 'global' && v.entry?.kind === 'placeholder') return v.name;
  if (v.kind === 'object' && v.foreign) return v.callable;
  if (depth >= 2 || !isContainer(v)) return null;
  const items = v.kind === 'dict' ? [...v.items.keys(), ...v.items.values()] : v.kind === 'object' ? v.args : v.items;
  for (const x of items) {
    const f = foreignIn(x, depth + 1);
    if (f !== null) return f;
  }
  return null;
}

function stateWritesData(state: PyValue | undefined): boolean {
  if (typeof state !== 'object' || state === null) return false;
  const dicts = state.kind === 'tuple' ? state.items : [state];
  return dicts.some((d) => typeof d === 'object' && d !== null && d.kind === 'dict' && [...d.items.keys()].some((k) => typeof k === 'string' && DATA_SETTERS.has(k)));
}

function guarded(name: string, call: Handler): Handler {
  return (args, fail) => {
    for (const a of args) {
      const f = foreignIn(a);
      if (f !== null) return { kind: 'unsupported', what: `tensor built by ${name} from ${f}, a foreign object` };
    }
    // _rebuild_parameter_with_state(data, rg, hooks, state) / _rebuild_from_type_v2(func, type, args, state)
    if (args.length === 4 && stateWritesData(args[3])) return { kind: 'unsupported', what: `tensor whose ${name} state sets its data attribute` };
    // _rebuild_from_type_v2 checks that `func` is the allowlist's own rebuild handler, not this wrapper
    const [func] = args;
    if (typeof func === 'object' && func !== null && func.kind === 'global' && TENSOR_BUILDERS.has(func.name)) {
      const original = lookupGlobal(func.name);
      if (original) return call([{ ...func, entry: original }, ...args.slice(1)], fail);
    }
    return call(args, fail);
  };
}

const cache = new Map<string, GlobalEntry>();

/** Every allowlisted name as in strict mode (tensor builders guarded), every other one a placeholder. */
export const placeholderResolver: GlobalResolver = (qualified) => {
  const known = lookupGlobal(qualified);
  if (known === undefined) return PLACEHOLDER;
  if (known.kind !== 'call' || !TENSOR_BUILDERS.has(qualified)) return known;
  let entry = cache.get(qualified);
  if (entry === undefined) {
    entry = { kind: 'call', call: guarded(qualified, known.call) };
    cache.set(qualified, entry);
  }
  return entry;
};

/** A placeholder global (a foreign name), as opposed to an allowlisted one. */
export function isPlaceholder(v: PyValue): v is Extract<PyValue, { kind: 'global' }> {
  return typeof v === 'object' && v !== null && v.kind === 'global' && v.entry?.kind === 'placeholder';
}
