import type { PyDict, PyObject, PyValue } from '../pickle/values.ts';
import { isContainer } from '../pickle/values.ts';

/**
 * `torch.save(model)`: an `nn.Module` pickles as NEWOBJ of its class + BUILD of its `__dict__`
 * (`Module.__setstate__` is a plain dict update, torch/nn/modules/module.py:1924-1950), so the
 * names `model.state_dict()` gives can be read off the records without running anything:
 * pre-order, each module's own parameters, then its persistent buffers, then its children
 * (`_save_to_state_dict` and the `_modules` recursion of `Module.state_dict`, :2143-2282).
 * None entries are skipped; shared modules and tied parameters appear under every name, as in
 * `state_dict()` (no de-duplication: the writer's alias policy handles them).
 */

/** The class a module record was made from (NEWOBJ's class, or copyreg._reconstructor's first argument at protocol 0/1). */
export function moduleClass(v: PyObject): string {
  if (v.callable === 'copyreg._reconstructor') {
    const c = v.args[0];
    if (typeof c === 'object' && c !== null && c.kind === 'global') return c.name;
  }
  return v.callable;
}

/** The record's `__dict__` when it is a module's: a dict state holding `_parameters` and `_modules`. */
export function moduleState(v: PyObject): PyDict | null {
  const states = v.foreign?.states ?? [];
  if (states.length !== 1) return null;
  const s = states[0]!;
  if (!isContainer(s) || s.kind !== 'dict' || !s.items.has('_parameters') || !s.items.has('_modules')) return null;
  return s;
}

/** A dict or an OrderedDict's items, in insertion order; anything else has none. */
function entries(v: PyValue | undefined): Array<[PyValue, PyValue]> {
  if (v === undefined || !isContainer(v) || v.kind !== 'dict') return [];
  return [...v.items];
}

function names(v: PyValue | undefined): Set<PyValue> {
  if (v === undefined || !isContainer(v)) return new Set();
  if (v.kind === 'set' || v.kind === 'list' || v.kind === 'tuple') return new Set(v.items);
  return new Set();
}

export interface ModuleVisitor {
  /** A parameter or persistent buffer value at its state_dict name. */
  value(v: PyValue, name: string): PyValue;
  /** The module's attributes outside the state dict, for reporting only. */
  attributes(state: PyDict, path: string, cls: string): void;
  /** Something the names may not match `state_dict()` for (custom classes, state-dict hooks). */
  flag(cls: string, message: string): void;
  /** Counts module visits, so a DAG of shared modules cannot blow up. */
  visit(path: string): void;
  join(base: string, seg: string): string;
}

const STATE_DICT_HOOKS = ['_state_dict_hooks', '_state_dict_pre_hooks'];

/**
 * The module tree below `v` as nested dicts in `state_dict()` order: each module a fresh dict (a
 * module shared under two names gets both), children under their attribute names.
 */
export function moduleTree(v: PyObject, state: PyDict, path: string, ancestors: Set<PyObject>, child: (c: PyValue, path: string) => PyObject | null, on: ModuleVisitor): PyDict {
  on.visit(path);
  const cls = moduleClass(v);
  if (!cls.startsWith('torch.nn.')) on.flag(cls, 'a class outside torch.nn may override get_extra_state or _save_to_state_dict, which the pickle cannot show');
  for (const h of STATE_DICT_HOOKS) if (entries(state.items.get(h)).length > 0) on.flag(cls, `${h} is not empty: a hook may rewrite its state_dict()`);
  on.attributes(state, path, cls);
  const out: PyDict = { kind: 'dict', items: new Map(), depth: 1, attrs: null };
  const put = (name: PyValue, value: PyValue): void => {
    if (typeof name !== 'string' || value === null) return;
    out.items.set(name, on.value(value, on.join(path, name)));
  };
  for (const [n, p] of entries(state.items.get('_parameters'))) put(n, p);
  const nonPersistent = names(state.items.get('_non_persistent_buffers_set'));
  for (const [n, b] of entries(state.items.get('_buffers'))) if (!nonPersistent.has(n)) put(n, b);
  ancestors.add(v);
  for (const [n, c] of entries(state.items.get('_modules'))) {
    if (typeof n !== 'string' || c === null) continue;
    const sub = on.join(path, n);
    const m = child(c, sub);
    if (m === null || ancestors.has(m)) {
      on.flag(cls, `child ${JSON.stringify(n)} is ${m === null ? 'not a module record' : 'one of its own ancestors'}; left out`);
      continue;
    }
    const s = moduleState(m)!;
    out.items.set(n, moduleTree(m, s, sub, ancestors, child, on));
  }
  ancestors.delete(v);
  out.depth = ancestors.size + 2;
  return out;
}
