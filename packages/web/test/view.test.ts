import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import type { TensorRow } from '../src/inspect/report.ts';
import { totalsByDtype } from '../src/inspect/rows.ts';
import { formatBytes, formatCompact } from '../src/ui/format.ts';
import { view, visibleWindow } from '../src/ui/sort.ts';

const row = (name: string, dtype: string, shape: number[], file: string | null = 'a', begin: number | null = 0): TensorRow => {
  const params = shape.reduce((a, b) => a * b, 1);
  return { name, dtype, shape, params, bytes: params * 4, file, begin, end: begin === null ? null : begin + params * 4 };
};

describe('table view: filter and sort', () => {
  const rows = [row('layers.10.w', 'F32', [4, 4]), row('layers.2.w', 'BF16', [8]), row('embed', 'F32', [2, 3], null, null), row('layers.1.b', 'U8', [1])];

  test('names sort with numbers as numbers, both directions', () => {
    expect(view(rows, '', { key: 'name', dir: 1 }).map((i) => rows[i]!.name)).toEqual(['embed', 'layers.1.b', 'layers.2.w', 'layers.10.w']);
    expect(view(rows, '', { key: 'name', dir: -1 }).map((i) => rows[i]!.name)).toEqual(['layers.10.w', 'layers.2.w', 'layers.1.b', 'embed']);
  });

  test('filter: every word must match a name substring or a dtype exactly', () => {
    expect(view(rows, 'LAYERS', { key: 'order', dir: 1 })).toEqual([0, 1, 3]);
    expect(view(rows, 'layers f32', { key: 'order', dir: 1 })).toEqual([0]);
    expect(view(rows, 'f3', { key: 'order', dir: 1 })).toEqual([]);
  });

  test('rows without a byte range sort last by range, both ways', () => {
    expect(view(rows, '', { key: 'range', dir: 1 }).at(-1)).toBe(2);
  });

  test('sorting is a stable permutation of the filtered rows (property)', () => {
    const arbRow = fc.tuple(fc.string({ maxLength: 5 }), fc.constantFrom('F32', 'BF16', 'U8'), fc.array(fc.nat(5), { maxLength: 3 })).map(([n, d, s]) => row(n, d, s));
    fc.assert(
      fc.property(fc.array(arbRow, { maxLength: 40 }), fc.constantFrom('order', 'name', 'dtype', 'shape', 'params', 'bytes', 'range'), fc.constantFrom(1, -1), (rs, key, dir) => {
        const out = view(rs, '', { key: key as 'name', dir: dir as 1 });
        expect([...out].sort((a, b) => a - b)).toEqual(rs.map((_, i) => i));
        if (key === 'params' || key === 'bytes') {
          for (let i = 1; i < out.length; i++) expect(dir * (rs[out[i]!]![key] - rs[out[i - 1]!]![key])).toBeGreaterThanOrEqual(0);
        }
      }),
    );
  });

  test('visible window covers the viewport plus overscan, within bounds', () => {
    expect(visibleWindow(0, 300, 30, 10_000, 8)).toEqual([0, 18]);
    expect(visibleWindow(30 * 5000, 300, 30, 10_000, 8)).toEqual([4992, 5018]);
    expect(visibleWindow(30 * 9999, 300, 30, 10_000, 8)).toEqual([9991, 10_000]);
    expect(visibleWindow(0, 300, 30, 0, 8)).toEqual([0, 0]);
  });

  test('dtype totals add up and are ordered by bytes', () => {
    const t = totalsByDtype(rows);
    expect(t.map((x) => x.dtype)).toEqual(['F32', 'BF16', 'U8']);
    expect(t.reduce((n, x) => n + x.tensors, 0)).toBe(rows.length);
    expect(t[0]).toMatchObject({ tensors: 2, params: 22, bytes: 88 });
  });

  test('sizes in SI units with three significant digits', () => {
    expect([0, 999, 1000, 1234, 12_345, 999_499, 999_500, 100e9, 1.5e12].map(formatBytes)).toEqual(['0 B', '999 B', '1 KB', '1.23 KB', '12.3 KB', '999 KB', '1 MB', '100 GB', '1.5 TB']);
    expect([999_999, 6_738_415_616, 70e9].map(formatCompact)).toEqual(['999,999', '6.74 B', '70 B']);
  });
});
