import type { TensorDescriptor } from '../tensor.ts';

/**
 * The same tensors, reporting bytes streamed through `onProgress` as their chunks go by. Without
 * `range`, so a writer cannot copy around the counting stream.
 */
export function withProgress(tensors: readonly TensorDescriptor[], onProgress: ((done: number, total: number) => void) | undefined): TensorDescriptor[] {
  if (!onProgress) return [...tensors];
  const total = tensors.reduce((n, t) => n + t.byteLength, 0);
  let done = 0;
  return tensors.map((t) => ({
    name: t.name,
    dtype: t.dtype,
    shape: t.shape,
    byteLength: t.byteLength,
    async *chunks(chunkSize?: number) {
      for await (const c of t.chunks(chunkSize)) {
        done += c.byteLength;
        onProgress(done, total);
        yield c;
      }
    },
  }));
}

/** Extension of a file name, lower case with its dot ('' when none). */
export function extensionOf(name: string): string {
  const base = name.slice(Math.max(name.lastIndexOf('/'), name.lastIndexOf('\\')) + 1);
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(dot).toLowerCase() : '';
}

/** The last path component of a name ('/' or '\' separated). */
export function baseName(name: string): string {
  const trimmed = name.replace(/[/\\]+$/, '');
  return trimmed.slice(Math.max(trimmed.lastIndexOf('/'), trimmed.lastIndexOf('\\')) + 1);
}
