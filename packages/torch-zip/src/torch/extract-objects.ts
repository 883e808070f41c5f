import { BytesSource, TensorportError, type Finding } from '@tensorport/core';
import { DEFAULT_LIMITS } from '../pickle/limits.ts';
import type { RunOptions } from '../pickle/interpreter.ts';
import type { PyDict, PyObject, PyValue } from '../pickle/values.ts';
import { isContainer } from '../pickle/values.ts';
import { lookupGlobal } from './allowlist.ts';
import { assemble, type AssembleOptions, type ResolveStorage, type TorchCheckpoint } from './assemble.ts';
import type { StorageBytes } from './layout.ts';
import { moduleState, moduleTree } from './module-walk.ts';
import type { ObjectsReport } from './objects-report.ts';
import { arrayKey, decodeArray, decodeScalar, isNumpyArray, isNumpyScalar } from './numpy-arrays.ts';
import { isPlaceholder, placeholderResolver } from './placeholders.ts';

/**
 * Extraction mode, after the pickle ran with placeholders: turns the object tree into one the
 * tensor walk reads. Module records become their `state_dict()` trees, numpy arrays tensors over
 * their own bytes, numpy scalars numbers, known map classes dicts; every other foreign record
 * becomes an opaque leaf, and tensors inside it are reported, not extracted (its class's
 * `__setstate__` would decide what they mean).
 */
export interface ExtractedObjects {
  readonly root: PyValue;
  readonly storages: ReadonlyMap<string, StorageBytes>;
  readonly report: ObjectsReport;
  readonly warnings: Finding[];
}

/** Dict and list subclasses whose items pickle passes straight to a plain `dict.__setitem__`. */
const MAP_CLASSES = new Set([
  'collections.defaultdict',
  'lightning_fabric.utilities.data.AttributeDict',
  'lightning.fabric.utilities.data.AttributeDict',
  'pytorch_lightning.utilities.parsing.AttributeDict',
  'lightning.pytorch.utilities.parsing.AttributeDict',
]);

const MAX_LISTED = 1000;
/** Globals named in the one summary warning; the report has them all. */
const MAX_IN_MESSAGE = 50;
/** Module visits plus entries emitted (a shared module is walked once per name): bounds a DAG of shared modules; real models stay in the thousands. */
const MAX_MODULE_VISITS = 1 << 16;

export function extractObjects(root: PyValue, referenced: readonly string[], maxNesting = DEFAULT_LIMITS.maxNesting): ExtractedObjects {
  const globals = new Map<string, { count: number; firstPath: string | null }>();
  const insideForeign: ObjectsReport['insideForeign'] = [];
  const numpyScalars: ObjectsReport['numpyScalars'] = [];
  const storages = new Map<string, StorageBytes>();
  const warnings: Finding[] = [];
  const flagged = new Set<string>();
  const memo = new Map<object, PyValue>();
  const counted = new Set<object>();
  const scannedModules = new Set<object>();
  let modules = 0;
  let visits = 0;

  const join = (base: string, seg: string): string => (base === '' ? seg : `${base}.${seg}`);
  const note = (name: string, path: string): void => {
    const g = globals.get(name);
    if (g) g.count++;
    else globals.set(name, { count: 1, firstPath: path });
  };
  const warn = (code: string, message: string, tensor?: string): void => {
    if (flagged.has(message)) return;
    flagged.add(message);
    warnings.push({ code, message, ...(tensor === undefined ? {} : { tensor }) });
  };
  const noteRecord = (o: PyObject, path: string): void => {
    if (counted.has(o)) return;
    counted.add(o);
    note(o.callable, path);
  };
  const deep = (depth: number, path: string): void => {
    if (depth > maxNesting) throw new TensorportError('PickleLimitExceeded', `nesting deeper than ${maxNesting} at ${JSON.stringify(path.slice(0, 200))}`, { tensor: path });
  };

  /** `inside`: the outermost foreign class this value sits in (its tensors are reported, not extracted). */
  const transform = (v: PyValue, path: string, depth: number, inside: string | null): PyValue => {
    deep(depth, path);
    if (typeof v !== 'object' || v === null) return v;
    switch (v.kind) {
      case 'global':
        if (isPlaceholder(v)) note(v.name, path);
        return v;
      case 'tensor': case 'unsupported':
        if (inside !== null && insideForeign.length < MAX_LISTED) insideForeign.push({ path, inside });
        return v;
      case 'object':
        if (!v.foreign) return v;
        return foreign(v, path, depth, inside);
      case 'tuple': case 'list': case 'set': {
        const seen = memo.get(v);
        if (seen !== undefined) return seen;
        const items: PyValue[] = [];
        const out = { ...v, items } as PyValue;
        memo.set(v, out);
        v.items.forEach((x, i) => items.push(transform(x, join(path, String(i)), depth + 1, inside)));
        return out;
      }
      case 'dict': {
        const seen = memo.get(v);
        if (seen !== undefined) return seen;
        const out: PyDict = { kind: 'dict', items: new Map(), depth: v.depth, attrs: v.attrs };
        memo.set(v, out);
        for (const [k, x] of v.items) out.items.set(k, transform(x, join(path, keySegment(k)), depth + 1, inside));
        return out;
      }
      default:
        return v;
    }
  };

  /** A foreign record's contents, for the report only: placeholders noted, tensors listed as inside it. */
  const scanContents = (o: PyObject, path: string, depth: number, inside: string): void => {
    const f = o.foreign!;
    transform(f.callee, path, depth + 1, inside);
    o.args.forEach((a, i) => transform(a, join(path, `(${i})`), depth + 1, inside));
    if (f.kwargs !== null) transform(f.kwargs, join(path, '(kwargs)'), depth + 1, inside);
    for (const s of f.states) stateScan(s, path, depth, inside);
    for (const [k, x] of f.dictItems) transform(x, join(path, keySegment(k)), depth + 1, inside);
    f.listItems.forEach((x, i) => transform(x, join(path, String(i)), depth + 1, inside));
  };
  const stateScan = (s: PyValue, path: string, depth: number, inside: string): void => {
    if (isContainer(s) && s.kind === 'dict') {
      for (const [k, x] of s.items) transform(x, join(path, keySegment(k)), depth + 1, inside);
    } else transform(s, join(path, '(state)'), depth + 1, inside);
  };

  const foreign = (o: PyObject, path: string, depth: number, inside: string | null): PyValue => {
    noteRecord(o, path);
    if (isNumpyArray(o)) {
      const seen = memo.get(o);
      if (seen !== undefined) return seen;
      const d = decodeArray(o, arrayKey(storages.size));
      scanContents(o, path, depth, o.callable);
      let out: PyValue;
      if ('kind' in d) out = d;
      else {
        storages.set(d.tensor.storage.key, { source: new BytesSource(d.bytes, `numpy array at ${path}`), bigEndian: d.bigEndian });
        out = d.tensor;
      }
      memo.set(o, out);
      if (inside !== null && insideForeign.length < MAX_LISTED) insideForeign.push({ path, inside });
      return out;
    }
    if (isNumpyScalar(o)) {
      scanContents(o, path, depth, o.callable);
      const s = decodeScalar(o);
      if (typeof s === 'string') {
        warn('TorchForeignObject', `${path || '<root>'}: ${s}`);
        return opaque(o);
      }
      if (numpyScalars.length < MAX_LISTED) numpyScalars.push({ path, ...s });
      return typeof s.value === 'number' && !/^[<>|]?[iub]/.test(s.dtype) ? { kind: 'float', value: s.value } : s.value;
    }
    const state = moduleState(o);
    if (state !== null) {
      modules++;
      return moduleTree(o, state, path, new Set(), (c, sub) => (isContainer(c) && c.kind === 'object' && c.foreign && moduleState(c) !== null ? (noteRecord(c, sub), c) : null), {
        value: (x, name) => {
          if (++visits > MAX_MODULE_VISITS) throw new TensorportError('PickleLimitExceeded', `more than ${MAX_MODULE_VISITS} module entries (shared modules) at ${JSON.stringify(name.slice(0, 200))}`);
          if (isContainer(x) && x.kind === 'object') {
            noteRecord(x, name);
            warn('TorchModuleValue', `${name} is a ${x.callable} record, not a tensor: left out of the module's state dict`, name);
            return opaque(x);
          }
          return transform(x, name, depth + 1, inside);
        },
        attributes: (s, p, cls) => {
          if (scannedModules.has(s)) return;
          scannedModules.add(s);
          for (const [k, x] of s.items) {
            if (k === '_parameters' || k === '_buffers' || k === '_modules') continue;
            transform(x, join(p, keySegment(k)), depth + 1, cls);
          }
        },
        flag: (cls, message) => warn('TorchModuleFlag', `${cls}: ${message}`),
        visit: (p) => {
          if (++visits > MAX_MODULE_VISITS) throw new TensorportError('PickleLimitExceeded', `more than ${MAX_MODULE_VISITS} module visits (shared modules) at ${JSON.stringify(p.slice(0, 200))}`);
          deep(depth + p.split('.').length, p);
        },
        join,
      });
    }
    const seen = memo.get(o);
    if (seen !== undefined) return seen;
    if (MAP_CLASSES.has(o.callable) && o.foreign!.states.length === 0 && o.foreign!.listItems.length === 0) {
      const out: PyDict = { kind: 'dict', items: new Map(), depth: o.depth, attrs: null };
      memo.set(o, out);
      o.args.forEach((a, i) => transform(a, join(path, `(${i})`), depth + 1, o.callable));
      for (const [k, x] of o.foreign!.dictItems) out.items.set(k, transform(x, join(path, keySegment(k)), depth + 1, inside));
      return out;
    }
    const out = opaque(o);
    memo.set(o, out);
    scanContents(o, path, depth, inside ?? o.callable);
    return out;
  };

  const tree = transform(root, '', 0, null);
  for (const g of referenced) if (!globals.has(g) && lookupGlobal(g) === undefined) globals.set(g, { count: 0, firstPath: null });
  const report: ObjectsReport = {
    globals: [...globals].map(([name, g]) => ({ name, ...g })),
    insideForeign, numpyScalars, numpyArrays: storages.size, modules,
  };
  if (insideForeign.length > 0) {
    const list = insideForeign.slice(0, 10).map((t) => `${t.path} (inside ${t.inside})`).join(', ');
    warnings.push({ code: 'TorchTensorInForeignObject', message: `${insideForeign.length} tensor${insideForeign.length === 1 ? '' : 's'} inside foreign objects not extracted (their classes decide what they mean): ${list}${insideForeign.length > 10 ? ', …' : ''}` });
  }
  return { root: tree, storages, report, warnings };
}

/** A foreign record with nothing reachable through it: the tensor walk drops it as a value. */
function opaque(o: PyObject): PyObject {
  return { kind: 'object', callable: o.callable, args: [], depth: 1 };
}

function keySegment(k: PyValue): string {
  if (typeof k === 'string' || typeof k === 'number' || typeof k === 'bigint') return String(k);
  if (typeof k === 'boolean') return k ? 'True' : 'False';
  return k === null ? 'None' : `<${k.kind} key>`;
}

/** The interpreter options of the mode: placeholders for foreign names, and no state on tensors. */
export function objectMode(opts: AssembleOptions): Pick<RunOptions, 'resolveGlobal' | 'refuseTensorBuild'> {
  return opts.allowObjects ? { resolveGlobal: placeholderResolver, refuseTensorBuild: true } : {};
}

/** `assemble`, after decoding the foreign objects when the mode is on. */
export function assembleObjects(root: PyValue, referenced: readonly string[], resolve: ResolveStorage, opts: AssembleOptions, base: Parameters<typeof assemble>[3]): TorchCheckpoint {
  if (!opts.allowObjects) return assemble(root, resolve, opts, base);
  const x = extractObjects(root, referenced, opts.maxNesting);
  const listed = x.report.globals.slice(0, MAX_IN_MESSAGE).map((g) => `${g.name} ×${g.count}${g.firstPath === null ? ' (unreachable)' : ` (first at ${g.firstPath || '<root>'})`}`);
  const summary: Finding[] = x.report.globals.length === 0 ? [] : [{
    code: 'TorchForeignObjects',
    message: `extraction mode: ${x.report.globals.length} foreign global${x.report.globals.length === 1 ? '' : 's'} kept as inert records, nothing run: ${listed.join(', ')}${x.report.globals.length > MAX_IN_MESSAGE ? ', …' : ''}`,
  }];
  const checkpoint = assemble(x.root, (ref, tensor) => x.storages.get(ref.key) ?? resolve(ref, tensor), opts, { ...base, warnings: [...base.warnings, ...summary, ...x.warnings] });
  return { ...checkpoint, objects: x.report };
}
