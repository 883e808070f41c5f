import { TensorportError } from '@tensorport/core';
import type { PyValue, StorageRef } from '../pickle/values.ts';
import { isInt, typeName } from '../pickle/values.ts';
import type { Fail } from './rebuild.ts';

/**
 * torch's persistent ids, the only ones allowed (torch: "Only persistent_load of storage is
 * allowed"). ZIP checkpoints: `('storage', storage_type, key, location, numel)`; legacy files add a
 * sixth item, `view_metadata` (None or `(view_key, offset, size)`). `numel` counts elements of the
 * storage class's dtype, or bytes for `UntypedStorage`.
 *
 * The first reference to a key fixes its type and size (as torch's cache does); a later one that
 * disagrees only happens in a crafted file, and is refused instead of silently reinterpreted.
 */
export type Layout = 'zip' | 'legacy' | 'any';

export class StorageTable {
  readonly storages = new Map<string, StorageRef>();
  /**
   * With `defer`, a persistent id of the other layout's arity (5 for legacy, 6 for ZIP) is read as
   * the scan reads it and its refusal kept here, so a run that scans and loads at once still names
   * every global after it; the reader throws it when the scan found nothing else.
   */
  deferred: TensorportError | null = null;
  constructor(private readonly layout: Layout, private readonly defer = false) {}

  readonly load = (pid: PyValue, fail: Fail): PyValue => {
    if (typeof pid !== 'object' || pid === null || pid.kind !== 'tuple') return fail(`persistent id must be a tuple, got ${typeName(pid)}`);
    const items = pid.items;
    if (items[0] !== 'storage') {
      const tag = typeof items[0] === 'string' ? `'${items[0]}'` : typeName(items[0] ?? null);
      return fail(`only storage persistent ids are allowed, got ${tag}${items[0] === 'module' ? ' (a pickled nn.Module class)' : ''}`);
    }
    const arity = this.layout === 'zip' ? [5] : this.layout === 'legacy' ? [6] : [5, 6];
    if (!arity.includes(items.length)) {
      const message = `storage persistent id has ${items.length} items, expected ${arity.join(' or ')}`;
      if (!this.defer || (items.length !== 5 && items.length !== 6)) fail(message);
      try {
        fail(message);
      } catch (e) {
        if (!(e instanceof TensorportError)) throw e;
        this.deferred ??= e;
      }
    }
    const [, type, key, location, numel, view] = items;
    if (typeof type !== 'object' || type === null || type.kind !== 'global' || type.entry?.kind !== 'storage') {
      return fail(`storage type must be a torch storage class, got ${typeName(type ?? null)}`);
    }
    if (typeof key !== 'string' || !/^[0-9]{1,20}$/.test(key)) return fail(`storage key must be decimal digits, got ${typeof key === 'string' ? JSON.stringify(key.slice(0, 40)) : typeName(key ?? null)}`);
    if (typeof location !== 'string') return fail(`storage location must be a str, got ${typeName(location ?? null)}`);
    if (typeof numel !== 'number' || !Number.isSafeInteger(numel) || numel < 0) return fail(`storage size must be a non-negative integer, got ${typeName(numel ?? null)}`);
    const ref: StorageRef = { kind: 'storage', key, dtype: type.entry.dtype, location, numel, view: viewOf(view, numel, fail) };
    const first = this.storages.get(key);
    if (first === undefined) {
      this.storages.set(key, ref);
      return ref;
    }
    if (first.dtype !== ref.dtype || first.numel !== ref.numel) {
      throw new TensorportError('TorchStorageMismatch', `storage ${key} is referenced as ${first.numel} × ${first.dtype ?? 'bytes'} and as ${ref.numel} × ${ref.dtype ?? 'bytes'}`, { other: key });
    }
    return ref.view === null ? first : ref;
  };
}

function viewOf(view: PyValue | undefined, numel: number, fail: Fail): StorageRef['view'] {
  if (view === undefined || view === null) return null;
  if (typeof view !== 'object' || view.kind !== 'tuple' || view.items.length !== 3) return fail('view_metadata must be None or (view_key, offset, size)');
  const [, offset, size] = view.items as [PyValue, PyValue, PyValue];
  if (!isInt(offset) || !isInt(size) || typeof offset !== 'number' || typeof size !== 'number' || offset < 0 || size < 0 || offset + size > numel) {
    return fail(`storage view [${String(offset)}, +${String(size)}) is outside its storage of ${numel} elements`);
  }
  return { offset, size };
}
