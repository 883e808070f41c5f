import { TensorportError } from '@tensorport/core';
import { DEFAULT_LIMITS } from '../pickle/limits.ts';
import { isContainer, typeName, type PyValue, type TensorRecord } from '../pickle/values.ts';

export interface FoundTensor {
  readonly name: string;
  readonly tensor: TensorRecord;
}

export interface WalkResult {
  readonly tensors: FoundTensor[];
  /** Non-tensor leaves (epoch, lr, config, ...) by path: dropped from the output. */
  readonly dropped: Array<{ name: string; type: string }>;
  /** How many dropped leaves were not listed (the list is capped). */
  readonly droppedUnlisted: number;
  /** Tensors safetensors cannot hold, skipped instead of refused (option `skipUnsupported`). */
  readonly skipped: Array<{ name: string; what: string }>;
}

const MAX_DROPPED_LISTED = 1000;

/** Picks the subtree at a dotted path (`state_dict`, `model.encoder`), for nested checkpoints. */
export function selectSubtree(root: PyValue, path: string): PyValue {
  let v = root;
  for (const seg of path.split('.')) {
    const next = childAt(v, seg);
    if (next === undefined) throw new TensorportError('TensorNotFound', `select: ${JSON.stringify(path)} has no ${JSON.stringify(seg)} (found ${typeName(v)})`, { tensor: path });
    v = next;
  }
  return v;
}

function childAt(v: PyValue, seg: string): PyValue | undefined {
  if (!isContainer(v)) return undefined;
  if (v.kind === 'dict') {
    if (v.items.has(seg)) return v.items.get(seg);
    const n = Number(seg);
    return /^-?[0-9]+$/.test(seg) && v.items.has(n) ? v.items.get(n) : undefined;
  }
  if (v.kind === 'list' || v.kind === 'tuple') return /^[0-9]+$/.test(seg) ? v.items[Number(seg)] : undefined;
  return undefined;
}

/**
 * Finds every tensor below `root`, named by its path joined with `.` (list items by index).
 * Iterative, and each container is entered once: shared references (a "billion laughs" DAG) and
 * cycles cost one visit (tensors inside a shared container keep the first path's names). One tensor
 * object under two names (tied weights, memo-shared) is listed under both.
 * Tensors that torch can build but safetensors cannot hold are refused here, by name.
 */
export function findTensors(root: PyValue, maxNesting = DEFAULT_LIMITS.maxNesting, skipUnsupported = false): WalkResult {
  const tensors: FoundTensor[] = [];
  const skipped: Array<{ name: string; what: string }> = [];
  const dropped: Array<{ name: string; type: string }> = [];
  let droppedUnlisted = 0;
  const seen = new Set<object>();
  // Names already given, to refuse a second tensor under one: made only once a name could repeat.
  // The root dict's own string keys cannot (a dict's keys are distinct); a nested path ("a" → "b")
  // or a number key could meet one of them ("a.b", "1"), and from then on every name is checked.
  let names: Set<string> | null = null;
  // The containers being walked, each with its place: depth first, children in order, and no
  // object per child (a state dict's 100,000 entries would each have had one, all alive at once).
  const stack: Frame[] = [];
  const join = (base: string, seg: string): string => (base === '' ? seg : `${base}.${seg}`);
  const drop = (name: string, type: string): void => {
    if (dropped.length < MAX_DROPPED_LISTED) dropped.push({ name, type });
    else droppedUnlisted++;
  };
  const visit = (v: PyValue, name: string, depth: number): void => {
    if (depth > maxNesting) throw new TensorportError('PickleLimitExceeded', `nesting deeper than ${maxNesting} at ${JSON.stringify(name.slice(0, 200))}`, { tensor: name });
    if (typeof v === 'object' && v !== null && v.kind === 'tensor') {
      const tensorName = name === '' ? 'tensor' : name;
      if (names === null && !(depth === 1 && rootKeys)) names = new Set(tensors.map((t) => t.name));
      if (names !== null) {
        if (names.has(tensorName)) throw new TensorportError('DuplicateTensorName', `two tensors are named ${JSON.stringify(tensorName)}`, { tensor: tensorName });
        names.add(tensorName);
      }
      tensors.push({ name: tensorName, tensor: v });
      return;
    }
    if (typeof v === 'object' && v !== null && v.kind === 'unsupported') {
      if (skipUnsupported) {
        skipped.push({ name, what: v.what });
        return;
      }
      throw new TensorportError('TorchUnsupportedTensor', `${JSON.stringify(name)} is a ${v.what}, which safetensors cannot hold`, { tensor: name });
    }
    if (isContainer(v) && (v.kind === 'dict' || v.kind === 'list' || v.kind === 'tuple')) {
      if (seen.has(v)) return;
      seen.add(v);
      stack.push(v.kind === 'dict' ? { name, depth, entries: v.items.entries(), items: null, next: 0 } : { name, depth, entries: null, items: v.items, next: 0 });
      return;
    }
    drop(name, typeName(v));
  };
  // True while the names come from string keys of one root dict, so cannot repeat.
  let rootKeys = false;
  visit(root, '', 0);
  while (stack.length > 0) {
    const f = stack[stack.length - 1]!;
    if (f.entries) {
      const step = f.entries.next();
      if (step.done) {
        stack.pop();
        continue;
      }
      const [k, child] = step.value;
      rootKeys = f.depth === 0 && typeof k === 'string';
      if (typeof k === 'string' || typeof k === 'number' || typeof k === 'bigint') visit(child, join(f.name, String(k)), f.depth + 1);
      else drop(join(f.name, `<${typeName(k)} key>`), typeName(child));
    } else if (f.next < f.items!.length) {
      rootKeys = false;
      const i = f.next++;
      visit(f.items![i]!, join(f.name, String(i)), f.depth + 1);
    } else {
      stack.pop();
    }
  }
  return { tensors, dropped, droppedUnlisted, skipped };
}

/** A container being walked: a dict through its entries, a list or tuple by index. */
interface Frame {
  readonly name: string;
  readonly depth: number;
  readonly entries: Iterator<[PyValue, PyValue]> | null;
  readonly items: readonly PyValue[] | null;
  next: number;
}
