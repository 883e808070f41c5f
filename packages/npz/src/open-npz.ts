import {
  TensorportError, openZip, readInOrder, type ByteSource, type Checkpoint, type DeflateCodec, type Finding, type TensorDescriptor,
  type ZipArchive, type ZipEntry, type ZipReadOptions,
} from '@tensorport/core';
import { arrayDescriptor, DEFAULT_MAX_FORTRAN_BYTES } from './descriptor.ts';
import { fflateCodec } from './fflate-codec.ts';
import { parseNpyHeader, readNpyPrefix, startsWithNpyMagic, type NpyHeaderOptions } from './npy-header.ts';

export interface NpzReadOptions extends NpyHeaderOptions, Omit<ZipReadOptions, 'codec'> {
  /** Raw DEFLATE for savez_compressed members (default fflate; pass `nodeZlibCodec` in Node for speed). */
  codec?: DeflateCodec;
  /** Largest Fortran-order array transposed in memory (default 1 GiB). */
  maxFortranBytes?: number;
  /** Check each member's CRC-32 while its tensor streams (default true; `range` readers bypass it). */
  verifyCrc?: boolean;
  onWarning?: (f: Finding) => void;
  /** The source's ZIP directory when the caller parsed it already (a Context shares one parse). */
  archive?: ZipArchive;
}

export interface NpzCheckpoint extends Checkpoint {
  readonly warnings: readonly Finding[];
  readonly archive: ZipArchive;
}

/**
 * Opens an .npz (np.savez / np.savez_compressed, JAX, MLX) without reading array data: the ZIP
 * directory, each local header, and each member's .npy header. Tensor names are member names with
 * one `.npy` removed (`/` kept). Members that are not .npy (no magic and no `.npy` suffix) are
 * skipped with a warning, as are directory entries.
 */
export async function openNpz(source: ByteSource, options: NpzReadOptions = {}): Promise<NpzCheckpoint> {
  const warnings: Finding[] = [];
  const warn = (f: Finding) => {
    warnings.push(f);
    options.onWarning?.(f);
  };
  const codec = options.codec ?? fflateCodec;
  const zip = options.archive ?? (await openZip(source, { ...options, codec }));
  const tensors: TensorDescriptor[] = [];
  const seen = new Map<string, string>();
  const members = zip.entries.filter((e) => !(e.name.endsWith('/') && e.uncompressedSize === 0));
  // Headers are read ahead, a window at a time: one awaited read per member made a 100k-member npz
  // spend minutes waiting on the file system (docs/benchmarks.md, "Many tensors").
  for await (const [entry, prefix] of readInOrder(members, (e) => readNpyPrefix((n) => zip.readPrefix(e, n), options))) {
    const name = entry.name.endsWith('.npy') ? entry.name.slice(0, -4) : entry.name;
    if (!entry.name.endsWith('.npy') && !startsWithNpyMagic(prefix)) {
      warn({ code: 'NpzSkippedMember', message: `member ${JSON.stringify(entry.name)} is not a .npy; skipped`, tensor: entry.name });
      continue;
    }
    const first = seen.get(name);
    if (first !== undefined) {
      throw new TensorportError('DuplicateTensorName', `members ${JSON.stringify(first)} and ${JSON.stringify(entry.name)} both give tensor ${JSON.stringify(name)}`, { tensor: name, other: first });
    }
    seen.set(name, entry.name);
    tensors.push(memberTensor(zip, entry, name, prefix, options, warn));
  }
  if (options.verifyCrc === false && zip.entries.length > 0) {
    warn({ code: 'ZipCrcNotChecked', message: `${source.name}: the CRC-32 of its ${zip.entries.length} member${zip.entries.length === 1 ? '' : 's'} was not checked (--no-crc); a corrupted member converts silently` });
  }
  return { format: 'npz', metadata: null, tensors, warnings, archive: zip, close: () => zip.close() };
}

function memberTensor(zip: ZipArchive, entry: ZipEntry, name: string, prefix: Uint8Array, options: NpzReadOptions, warn: (f: Finding) => void): TensorDescriptor {
  const h = parseNpyHeader(prefix, name, options, warn);
  const have = entry.uncompressedSize - h.dataOffset;
  if (have < h.byteLength) {
    throw new TensorportError('NpyTruncated', `${name}: array data needs ${h.byteLength} bytes, member ${JSON.stringify(entry.name)} holds ${have}`, { tensor: name, offset: entry.dataOffset });
  }
  if (have > h.byteLength) {
    warn({ code: 'NpyTrailingBytes', message: `${name}: ${have - h.byteLength} bytes after the array data are ignored (as np.load does)`, tensor: name });
  }
  const verify = options.verifyCrc !== false;
  return arrayDescriptor(
    name,
    h,
    {
      stream: (chunkSize) => zip.stream(entry, { verify, splitAt: h.dataOffset, ...(chunkSize === undefined ? {} : { chunkSize }) }),
      ...(entry.stored ? { range: { source: zip.source, offset: entry.dataOffset } } : {}),
      ...(zip.offThread(entry) ? { offThread: true } : {}),
    },
    options.maxFortranBytes ?? DEFAULT_MAX_FORTRAN_BYTES,
  );
}
