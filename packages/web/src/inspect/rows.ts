import type { TensorDescriptor } from '@tensorport/core';
import type { DtypeTotal, TensorRow } from './report.ts';

/** A header tensor whose dims are only exact as bigints (a dim above 2^53 with zero elements). */
interface ExactShaped {
  readonly info?: { readonly shape: readonly number[]; readonly exactShape?: readonly bigint[] };
}

/** Dims without touching a `shape` getter that refuses inexact dims (the page shows, it does not convert). */
function dimsOf(t: TensorDescriptor & ExactShaped): readonly number[] {
  return t.info ? t.info.shape : t.shape;
}

function count(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return Number.isSafeInteger(n) ? n : 0;
}

export function toRow(t: TensorDescriptor): TensorRow {
  const shape = [...dimsOf(t)];
  const range = t.range;
  return {
    name: t.name,
    dtype: t.dtype,
    shape,
    params: count(shape),
    bytes: t.byteLength,
    file: range ? range.source.name : null,
    begin: range ? range.offset : null,
    end: range ? range.offset + t.byteLength : null,
  };
}

export function totalsByDtype(rows: readonly TensorRow[]): DtypeTotal[] {
  const by = new Map<string, DtypeTotal>();
  for (const r of rows) {
    let t = by.get(r.dtype);
    if (!t) by.set(r.dtype, (t = { dtype: r.dtype, tensors: 0, params: 0, bytes: 0 }));
    t.tensors++;
    t.params += r.params;
    t.bytes += r.bytes;
  }
  return [...by.values()].sort((a, b) => b.bytes - a.bytes || a.dtype.localeCompare(b.dtype));
}
