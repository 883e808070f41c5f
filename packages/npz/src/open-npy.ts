import { TensorportError, readChunks, type ByteSource, type Checkpoint, type Finding } from '@tensorport/core';
import { arrayDescriptor, DEFAULT_MAX_FORTRAN_BYTES } from './descriptor.ts';
import { parseNpyHeader, readNpyPrefix, type NpyHeaderOptions } from './npy-header.ts';

export interface NpyReadOptions extends NpyHeaderOptions {
  /** Tensor name (default: the source name without directories and `.npy`). */
  name?: string;
  /** Largest Fortran-order array transposed in memory (default 1 GiB). */
  maxFortranBytes?: number;
  onWarning?: (f: Finding) => void;
}

export interface NpyCheckpoint extends Checkpoint {
  readonly warnings: readonly Finding[];
}

/** Opens a single .npy as a one-tensor checkpoint (format `'npy'`); reads only the header. */
export async function openNpy(source: ByteSource, options: NpyReadOptions = {}): Promise<NpyCheckpoint> {
  const warnings: Finding[] = [];
  const warn = (f: Finding) => {
    warnings.push(f);
    options.onWarning?.(f);
  };
  const name = options.name ?? (source.name.split(/[\\/]/).pop()!.replace(/\.npy$/, '') || 'array');
  const prefix = await readNpyPrefix((n) => source.read(0, Math.min(source.size, n)), options);
  const h = parseNpyHeader(prefix, name, options, warn);
  const trailing = source.size - h.dataOffset - h.byteLength;
  if (trailing > 0) warn({ code: 'NpyTrailingBytes', message: `${name}: ${trailing} bytes after the array data are ignored (as np.load does)`, tensor: name });
  if (trailing < 0) {
    throw new TensorportError('NpyTruncated', `${name}: array data needs ${h.byteLength} bytes, the file has ${source.size - h.dataOffset}`, { tensor: name, offset: source.size });
  }
  const end = h.dataOffset + h.byteLength;
  const tensor = arrayDescriptor(
    name,
    h,
    { stream: (chunkSize) => readChunks(source, 0, end, chunkSize), range: { source, offset: 0 } },
    options.maxFortranBytes ?? DEFAULT_MAX_FORTRAN_BYTES,
  );
  return { format: 'npy', metadata: null, tensors: [tensor], warnings, close: () => source.close() };
}
