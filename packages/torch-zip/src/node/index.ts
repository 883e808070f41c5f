import { basename, extname } from 'node:path';
import { sameFile, FileSink, FileSource, type FileSinkOptions } from '@tensorport/core/node';
import { TensorportError, type TensorDescriptor } from '@tensorport/core';
import type { TorchCheckpoint } from '../torch/assemble.ts';
import { openTorchCheckpoint, type OpenTorchOptions } from '../torch/open.ts';
import { writeTorchCheckpoint, type WriteTorchOptions, type WriteTorchReport } from '../torch/writer.ts';
import { tiedWeightsBeside } from './model-config.ts';

export { tiedWeightsBeside } from './model-config.ts';

/**
 * Opens a `.pt`/`.pth`/`.bin` file; `close()` on the checkpoint closes the file. Unless
 * `tiedWeights` is given, a config.json beside the file settles how tied weights are written.
 */
export async function openTorchCheckpointFile(path: string, opts: OpenTorchOptions = {}): Promise<TorchCheckpoint> {
  const tiedWeights = opts.tiedWeights ?? (await tiedWeightsBeside(path));
  const source = await FileSource.open(path);
  try {
    return await openTorchCheckpoint(source, tiedWeights ? { ...opts, tiedWeights } : opts);
  } catch (e) {
    await source.close();
    throw e;
  }
}

export interface WriteTorchFileOptions extends WriteTorchOptions, Pick<FileSinkOptions, 'force' | 'fsync'> {
  /** Paths being read: writing over one of them is SameInputOutput. */
  inputs?: readonly string[];
}

/**
 * Writes a `.pt` file all-or-nothing (temp file, then rename). The archive directory defaults to
 * the file's stem, as `torch.save(obj, path)` names it.
 */
export async function writeTorchCheckpointFile(
  input: { readonly tensors: readonly TensorDescriptor[]; readonly metadata: ReadonlyMap<string, string> | null },
  path: string,
  opts: WriteTorchFileOptions = {},
): Promise<WriteTorchReport> {
  for (const i of opts.inputs ?? []) {
    if (await sameFile(i, path)) throw new TensorportError('SameInputOutput', `output ${path} would replace the input ${i}`, { path });
  }
  const stem = basename(path, extname(path));
  const archiveName = opts.archiveName ?? (/^[A-Za-z0-9_.-]+$/.test(stem) && stem !== '.' && stem !== '..' ? stem : 'archive');
  const sink = await FileSink.create(path, { ...(opts.force === undefined ? {} : { force: opts.force }), ...(opts.fsync === undefined ? {} : { fsync: opts.fsync }) });
  return writeTorchCheckpoint(input, sink, { ...opts, archiveName });
}
