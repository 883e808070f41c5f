/** What extraction mode found besides tensors (torch/extract-objects.ts builds it; a checkpoint carries it). */
export interface ObjectsReport {
  /** Every foreign global: how many records or references the tree holds, and the first path where one was seen (null: referenced by the pickle but not reachable from its result). */
  readonly globals: Array<{ name: string; count: number; firstPath: string | null }>;
  /** Tensors reached only inside foreign objects: not extracted. The first 1000. */
  readonly insideForeign: Array<{ path: string; inside: string }>;
  readonly numpyScalars: Array<{ path: string; dtype: string; value: number | bigint | boolean }>;
  readonly numpyArrays: number;
  readonly modules: number;
}
