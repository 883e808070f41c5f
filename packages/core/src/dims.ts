/**
 * One array per distinct shape (or stride): a checkpoint's tensors share a few shapes, and 100,000
 * tensors each holding their own arrays of two numbers cost 64 B an array, held for as long as the
 * tensors are (measured: a third of a 100,000-tensor pickle's values; 6 MB of a header's decode).
 * The array handed back is frozen, since others hold it too; callers pass an array they made and
 * will not change. At most INTERNED_MAX shapes of at most INTERNED_DIMS dims are kept, process-wide.
 */
export function internDims(dims: number[]): readonly number[] {
  if (dims.length > INTERNED_DIMS) return dims;
  const key = dims.join(',');
  const known = interned.get(key);
  if (known) return known;
  if (interned.size >= INTERNED_MAX) return dims;
  Object.freeze(dims);
  interned.set(key, dims);
  return dims;
}

const interned = new Map<string, readonly number[]>();
const INTERNED_MAX = 4096;
const INTERNED_DIMS = 8;
