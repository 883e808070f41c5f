import { stat } from 'node:fs/promises';
import { extname, resolve, sep } from 'node:path';
import { TensorportError, isDType, toFinding, type Checkpoint, type DType, type Finding, type TensorDescriptor } from '@tensorport/core';
import { FileSink, FileSource, nodeZlibCodec, sameFile } from '@tensorport/core/node';
import { openNpy, openNpz, writeNpy, writeNpz } from '@tensorport/npz';
import type { FormatHandler, OpenOptions, Probe, ValidationReport, WriteOptions, WriteResult } from './registry.ts';

/** `--void1`: the one-byte dtype a `<V1` array holds (ml_dtypes writes float8 that way). */
function void1Of(options: OpenOptions | undefined): { void1?: DType } {
  const v = options?.void1;
  if (v === undefined) return {};
  const d = v.toUpperCase();
  if (!isDType(d)) throw new TensorportError('InvalidOption', `--void1 ${v}: not a dtype (e.g. F8_E4M3, F8_E5M2, U8)`);
  return { void1: d };
}

/** Opens a file, hands it to `open`, and closes it when `open` fails. */
async function withFile<C extends Checkpoint>(path: string, open: (source: FileSource) => Promise<C>): Promise<C> {
  const source = await FileSource.open(path);
  try {
    return await open(source);
  } catch (e) {
    await source.close();
    throw e;
  }
}

/** A single file output: a directory is refused, an input is never replaced. */
async function fileTarget(outPath: string, options: WriteOptions, format: string): Promise<void> {
  const info = await stat(outPath).catch(() => null);
  if (outPath.endsWith('/') || outPath.endsWith(sep) || info?.isDirectory()) {
    throw new TensorportError('InvalidOption', `${format} output is one file: give a file path, not the directory ${outPath}`, { path: outPath });
  }
  for (const i of options.inputs) {
    if (await sameFile(i, outPath)) throw new TensorportError('SameInputOutput', `output ${outPath} would replace the input ${i}`, { path: outPath });
  }
}

/** Reads every tensor's bytes once, so truncations, CRCs and inflation errors all surface. */
async function validateWith(path: string, open: () => Promise<Checkpoint & { warnings: readonly Finding[] }>): Promise<ValidationReport> {
  let c: (Checkpoint & { warnings: readonly Finding[] }) | null = null;
  try {
    c = await open();
    for (const t of c.tensors) for await (const chunk of t.chunks()) void chunk;
    return { valid: true, errors: [], warnings: c.warnings.map((f) => ({ path, ...f })), files: [path] };
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
    return { valid: false, errors: [{ path, ...toFinding(e) }], warnings: c ? c.warnings.map((f) => ({ path, ...f })) : [], files: [path] };
  } finally {
    await c?.close();
  }
}

/**
 * Detection: a ZIP all of whose members are `*.npy` (an empty archive included, as np.savez()
 * writes it). A damaged ZIP named .npz is still read as npz, to get the reader's precise error.
 */
function isNpzArchive(p: Probe): boolean {
  if (p.isDirectory || p.content !== 'zip' || p.torch) return false;
  if (p.zipMembers === undefined || p.zipMembers === null) return extname(p.path).toLowerCase() === '.npz';
  return p.zipMembers.every((name) => name.endsWith('.npy'));
}

const openNpzFile = (path: string, options?: OpenOptions) => withFile(path, (s) => openNpz(s, { codec: nodeZlibCodec, ...void1Of(options) }));
const openNpyFile = (path: string, options?: OpenOptions) =>
  withFile(path, (s) => openNpy(s, { ...void1Of(options), ...(options?.name === undefined ? {} : { name: options.name }) }));

/** NumPy .npz: stored (np.savez) by default, deflated (np.savez_compressed) with `compress`. */
export const npzFormat: FormatHandler = {
  name: 'npz',
  extensions: ['.npz'],
  detect: isNpzArchive,
  open: openNpzFile,

  async write(tensors, _metadata, outPath, options): Promise<WriteResult> {
    await fileTarget(outPath, options, 'npz');
    const sink = await FileSink.create(outPath, { force: options.force, fsync: options.fsync !== false });
    const r = await writeNpz(withProgress(tensors, options), sink, { compress: options.compress === true, codec: nodeZlibCodec });
    return { files: [resolve(outPath)], bytes: r.bytesWritten };
  },

  validate: (path, options?: OpenOptions) => validateWith(path, () => openNpzFile(path, options)),
};

/** NumPy .npy: exactly one array, named after the file stem (or `name`). */
export const npyFormat: FormatHandler = {
  name: 'npy',
  extensions: ['.npy'],
  detect: (p: Probe) => !p.isDirectory && p.content === 'npy',
  open: openNpyFile,

  async write(tensors, _metadata, outPath, options): Promise<WriteResult> {
    if (tensors.length !== 1) {
      throw new TensorportError('InvalidOption', `a .npy holds one array; the input has ${tensors.length} tensors (write an .npz instead)`, { path: outPath });
    }
    await fileTarget(outPath, options, 'npy');
    const sink = await FileSink.create(outPath, { force: options.force, fsync: options.fsync !== false });
    const r = await writeNpy(withProgress(tensors, options)[0]!, sink);
    return { files: [resolve(outPath)], bytes: r.bytesWritten };
  },

  validate: (path, options?: OpenOptions) => validateWith(path, () => openNpyFile(path, options)),
};

/** Reports bytes streamed through `onProgress` as each tensor's chunks go by. */
export function withProgress(tensors: readonly TensorDescriptor[], options: Pick<WriteOptions, 'onProgress'>): TensorDescriptor[] {
  const onProgress = options.onProgress;
  if (!onProgress) return [...tensors];
  const total = tensors.reduce((n, t) => n + t.byteLength, 0);
  let done = 0;
  // Without `range`, so a writer cannot copy around the counting stream.
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
