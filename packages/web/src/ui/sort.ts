import type { TensorRow } from '../inspect/report.ts';

/** Columns of the tensor table; `order` is the file's own order (data order for safetensors). */
export type SortKey = 'order' | 'name' | 'dtype' | 'shape' | 'params' | 'bytes' | 'range';
export interface SortState {
  key: SortKey;
  dir: 1 | -1;
}

/** Layer numbers compare as numbers: `layers.2` before `layers.10`. */
const collator = new Intl.Collator('en', { numeric: true, sensitivity: 'variant' });

function compareShape(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

const COMPARE: Record<Exclude<SortKey, 'order'>, (a: TensorRow, b: TensorRow) => number> = {
  name: (a, b) => collator.compare(a.name, b.name),
  dtype: (a, b) => collator.compare(a.dtype, b.dtype),
  shape: (a, b) => compareShape(a.shape, b.shape),
  params: (a, b) => a.params - b.params,
  bytes: (a, b) => a.bytes - b.bytes,
  // Rows without a plain range go last either way.
  range: (a, b) => (a.file === b.file ? 0 : a.file === null ? 1 : b.file === null ? -1 : collator.compare(a.file, b.file)) || (a.begin ?? Infinity) - (b.begin ?? Infinity),
};

/**
 * Indices of `rows` that match `query`, in the order `sort` asks for. The query matches a name
 * (case-insensitive substring) or a dtype exactly; several words must all match.
 */
export function view(rows: readonly TensorRow[], query: string, sort: SortState): number[] {
  const words = query.trim().toLowerCase().split(/\s+/).filter(Boolean);
  const out: number[] = [];
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]!;
    if (words.length > 0) {
      const name = r.name.toLowerCase();
      const dtype = r.dtype.toLowerCase();
      if (!words.every((w) => name.includes(w) || dtype === w)) continue;
    }
    out.push(i);
  }
  if (sort.key !== 'order') {
    const cmp = COMPARE[sort.key];
    // Ties keep file order, in both directions.
    out.sort((i, j) => sort.dir * cmp(rows[i]!, rows[j]!) || i - j);
  } else if (sort.dir === -1) out.reverse();
  return out;
}

/** Which rows a viewport shows: [first, last) with `overscan` extra rows each side. */
export function visibleWindow(scrollTop: number, viewportHeight: number, rowHeight: number, count: number, overscan = 8): [number, number] {
  const first = Math.max(0, Math.floor(scrollTop / rowHeight) - overscan);
  const last = Math.min(count, Math.ceil((scrollTop + viewportHeight) / rowHeight) + overscan);
  return [first, Math.max(first, last)];
}
