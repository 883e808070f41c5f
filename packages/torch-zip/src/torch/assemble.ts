import { SliceSource, TensorportError, type Checkpoint, type Finding, type TensorDescriptor } from '@tensorport/core';
import { isContainer, typeName, type PyValue, type StorageRef, type TensorRecord } from '../pickle/values.ts';
import type { ObjectsReport } from './objects-report.ts';
import { dtypeInfo } from './dtypes.ts';
import { planTensor, tensorChunks, type StorageBytes, type TensorLayout } from './layout.ts';
import { keptTiedName, mayWriteOnce, type TiedWeightsConfig } from './tied.ts';
import { findTensors, selectSubtree, type FoundTensor } from './walk.ts';

export interface AssembleOptions {
  /** Dotted path of the subtree holding the tensors (`state_dict`, `model`). */
  select?: string;
  /**
   * Tied weights (several names, one identical view of one storage) are written once by default,
   * under the name transformers keeps (the input embedding; else the first in sorted order), with
   * `metadata[other] = kept` (as HF's convert.py does). true writes every name as its own copy.
   */
  keepAliases?: boolean;
  /** The model directory's config.json tying fields: `tie_word_embeddings: false` keeps both names of an embedding tie. */
  tiedWeights?: TiedWeightsConfig;
  /** Skip (with a warning) tensors safetensors cannot hold, instead of refusing the checkpoint. */
  skipUnsupported?: boolean;
  maxViewBytes?: number;
  maxNesting?: number;
  /**
   * Extraction mode (off by default): globals outside the allowlist become inert placeholders
   * instead of refusing the file; module records, numpy arrays and scalars are decoded by name and
   * tensors inside other foreign objects are reported, not extracted (torch/extract-objects.ts).
   */
  allowObjects?: boolean;
}

export interface TorchCheckpoint extends Checkpoint {
  readonly format: 'torch-zip' | 'torch-legacy';
  /** Non-fatal observations: dropped non-tensor values, ignored records. */
  readonly warnings: Finding[];
  /** Tied names that were not written, each mapped to the name that was. */
  readonly aliases: Record<string, string>;
  /** Every global the pickle referenced (all allowlisted, or it would not have loaded). */
  readonly globals: string[];
  /** Non-tensor values left out (epoch, lr, optimizer param groups), by path; the first 1000. */
  readonly dropped: ReadonlyArray<{ readonly name: string; readonly type: string }>;
  /** Extraction mode only: the foreign objects the pickle held. */
  readonly objects?: ObjectsReport;
}

// Paths named in the one warning about left-out values; `dropped` has them all (up to 1000).
const DROPPED_IN_MESSAGE = 20;

/** One warning naming what was left out, so convert and inspect say it and not only validate. */
function droppedWarning(dropped: ReadonlyArray<{ name: string; type: string }>, unlisted: number): Finding | null {
  const total = dropped.length + unlisted;
  if (total === 0) return null;
  const named = dropped.slice(0, DROPPED_IN_MESSAGE).map((d) => `${d.name || '<root>'} (${d.type})`);
  const more = total - named.length;
  return {
    code: 'TorchValueDropped',
    message: `${total} non-tensor value${total === 1 ? '' : 's'} left out (only tensors are converted): ${named.join(', ')}${more > 0 ? `, and ${more} more` : ''}`,
    ...(dropped.length === 1 && unlisted === 0 ? { tensor: dropped[0]!.name } : {}),
  };
}

/** A selected value with no tensor below it: converting it would write an empty file (issue 11). */
function emptySelection(path: string, v: PyValue, values: number): TensorportError {
  const what = isContainer(v) && (v.kind === 'dict' || v.kind === 'list' || v.kind === 'tuple')
    ? `a ${v.kind} holding no tensors (${values} other value${values === 1 ? '' : 's'})`
    : `${/^[aeiou]/i.test(typeName(v)) ? 'an' : 'a'} ${typeName(v)}, not a tensor`;
  return new TensorportError('TensorNotFound', `select: ${JSON.stringify(path)} is ${what}; nothing to convert`, { tensor: path });
}

export type ResolveStorage = (ref: StorageRef, tensor: string) => StorageBytes;

/** From the unpickled object to descriptors: find, name, check, and de-duplicate tensors. */
export function assemble(
  root: PyValue,
  resolve: ResolveStorage,
  opts: AssembleOptions,
  base: { format: TorchCheckpoint['format']; globals: string[]; warnings: Finding[]; close: () => Promise<void> },
): TorchCheckpoint {
  const subtree = opts.select === undefined ? root : selectSubtree(root, opts.select);
  const found = findTensors(subtree, opts.maxNesting, opts.skipUnsupported);
  if (opts.select !== undefined && found.tensors.length === 0 && found.skipped.length === 0) throw emptySelection(opts.select, subtree, found.dropped.length + found.droppedUnlisted);
  const warnings = [...base.warnings];
  const leftOut = droppedWarning(found.dropped, found.droppedUnlisted);
  if (leftOut) warnings.push(leftOut);
  for (const s of found.skipped) warnings.push({ code: 'TorchTensorSkipped', message: `${s.name} is a ${s.what}, which safetensors cannot hold; skipped`, tensor: s.name });

  // Per storage key: the dtype it is viewed as, and its views grouped by identity. Only a storage
  // viewed twice can hold tied names, so most (one tensor each) never build an identity string,
  // nor a record: their entry is the index of their one planned view.
  const storages = new Map<string, number | StorageUse>();
  const views: ViewGroup[] = [];
  const planned: Array<TorchTensor | undefined> = [];
  found.tensors.forEach(({ name, tensor }, at) => {
    const storage = resolve(tensor.storage, name);
    const seen = storages.get(tensor.storage.key);
    const use = typeof seen === 'number' ? { dtype: found.tensors[seen]!.tensor.dtype, first: seen, groups: null } : seen;
    if (use !== undefined && use.dtype !== tensor.dtype) {
      throw new TensorportError('TorchStorageMismatch', `storage ${tensor.storage.key} is viewed as ${use.dtype} and as ${tensor.dtype} (by ${JSON.stringify(name)})`, { tensor: name });
    }
    if (opts.skipUnsupported && dtypeInfo(tensor.dtype).safetensors === null) {
      if (use === undefined) storages.set(tensor.storage.key, { dtype: tensor.dtype, first: -1, groups: null });
      warnings.push({ code: 'TorchTensorSkipped', message: `${name} is torch.${tensor.dtype}, which safetensors has no dtype for; skipped`, tensor: name });
      planned.push(undefined);
      return;
    }
    planned.push(new TorchTensor(name, planTensor(name, tensor, storage.source.size, opts.maxViewBytes), storage));
    if (use === undefined) storages.set(tensor.storage.key, at);
    else {
      addView(use, at, found.tensors, views);
      storages.set(tensor.storage.key, use);
    }
  });

  const aliases: Record<string, string> = Object.create(null) as Record<string, string>;
  if (!opts.keepAliases) {
    // in the order of each group's first name, as the names appear
    for (const { names } of views.sort((a, b) => a.at - b.at)) {
      if (names.length < 2) continue;
      if (!mayWriteOnce(names, opts.tiedWeights)) {
        warnings.push({ code: 'TorchTiedCopied', message: `${names.join(', ')} share one storage, but ${opts.tiedWeights?.path ?? 'config.json'} says tie_word_embeddings=false (transformers would not re-tie them): each name written as its own copy`, tensor: names[0]! });
        continue;
      }
      const kept = keptTiedName(names);
      for (const n of names) if (n !== kept) aliases[n] = kept;
    }
  }
  const tensors: TensorDescriptor[] = [];
  for (const t of planned) if (t && !(t.name in aliases)) tensors.push(t);
  const metadata = new Map<string, string>([['format', 'pt']]);
  // as convert.py: an alias never overwrites an entry already there (a tensor named `format`)
  for (const [removed, kept] of Object.entries(aliases)) if (!metadata.has(removed)) metadata.set(removed, kept);
  return { format: base.format, metadata, tensors, warnings, aliases, globals: base.globals, dropped: found.dropped, close: base.close };
}

/** Names of one storage viewed identically; `at` is where the first of them was found. */
interface ViewGroup {
  readonly at: number;
  readonly names: string[];
}

interface StorageUse {
  readonly dtype: string;
  /** The first planned view (its index among the found tensors; -1 for none), until a second one makes `groups`. */
  first: number;
  /** Groups by view identity, once the storage has two planned views. */
  groups: Map<string, ViewGroup> | null;
}

function addView(use: StorageUse, at: number, found: readonly FoundTensor[], all: ViewGroup[]): void {
  const groups = (use.groups ??= new Map());
  const join = (i: number): void => {
    const { name, tensor } = found[i]!;
    const id = viewIdentity(tensor);
    const g = groups.get(id);
    if (g) g.names.push(name);
    else {
      const added = { at: i, names: [name] };
      groups.set(id, added);
      all.push(added);
    }
  };
  if (use.first >= 0) join(use.first);
  use.first = -1;
  join(at);
}

/** Same storage, dtype, offset, shape and strides: the same bytes, so one copy serves all names. */
function viewIdentity(t: TensorRecord): string {
  return `${t.storage.key}|${t.storage.view?.offset ?? ''}|${t.dtype}|${t.offset}|${t.shape.join(',')}|${t.stride.join(',')}`;
}

/**
 * A planned tensor: a class, not a closure per tensor (a checkpoint may hold 100,000), whose
 * fields are its name, layout and storage; the rest is read from them when asked.
 */
class TorchTensor implements TensorDescriptor {
  constructor(
    readonly name: string,
    private readonly layout: TensorLayout,
    private readonly storage: StorageBytes,
  ) {}

  get dtype(): TensorDescriptor['dtype'] {
    return this.layout.dtype;
  }
  get shape(): readonly number[] {
    return this.layout.shape;
  }
  get byteLength(): number {
    return this.layout.byteLength;
  }

  /** Where the bytes are in the input file, not in its storage's window (one file, absolute offsets); only for bytes read as they lie. */
  get range(): { readonly source: StorageBytes['source']; readonly offset: number } | undefined {
    const { layout, storage } = this;
    if (!layout.contiguous || storage.stream || (storage.bigEndian && layout.swapUnit > 1)) return undefined;
    const at = storage.source instanceof SliceSource ? storage.source.origin() : { source: storage.source, offset: 0 };
    return { source: at.source, offset: at.offset + layout.start };
  }

  chunks(chunkSize?: number): AsyncIterable<Uint8Array> {
    return tensorChunks(this.layout, this.storage, chunkSize);
  }
}

