import { readdir, stat } from 'node:fs/promises';
import { extname } from 'node:path';
import { TensorportError, detectSource, openZip, type Finding } from '@tensorport/core';
import { FileSource, nodeZlibCodec } from '@tensorport/core/node';
import { sniffTorchCheckpoint } from '@tensorport/torch-zip';
import { FORMATS, detectFormat, type FormatHandler, type Probe } from './formats/registry.ts';

/** What a file's leading bytes say, in words, for "not supported" messages. */
const CONTENT_NAMES: Readonly<Record<string, string>> = {
  safetensors: 'safetensors',
  zip: 'a ZIP archive (a PyTorch .pt/.pth checkpoint or a NumPy .npz)',
  npy: 'a NumPy .npy array',
  pickle: 'a bare pickle (a legacy PyTorch checkpoint)',
  gguf: 'a GGUF file (llama.cpp)',
  hdf5: 'an HDF5 file (Keras/TF .h5)',
  json: 'JSON text',
  unknown: 'no checkpoint format tensorport knows',
};

/** Looks at a path: directory entries, or a file's magic bytes. */
export async function probe(path: string): Promise<Probe> {
  let info;
  try {
    info = await stat(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file or directory' : code === 'EACCES' ? 'permission denied' : (code ?? (e as Error).message);
    throw new TensorportError('IoError', `cannot read ${path || "''"}: ${why}`, { path, cause: e });
  }
  if (info.isDirectory()) {
    return { path, isDirectory: true, content: null, entries: (await readdir(path)).sort() };
  }
  const source = await FileSource.open(path);
  try {
    const content = await detectSource(source);
    if (content !== 'zip' && content !== 'pickle') return { path, isDirectory: false, content, entries: [] };
    const torch = await sniffTorchCheckpoint(source);
    const zipMembers = content === 'zip' && torch === null ? await memberNames(source) : null;
    return { path, isDirectory: false, content, entries: [], torch, zipMembers };
  } finally {
    await source.close();
  }
}

/** A ZIP's member names (central directory only), or null when it cannot be read as a ZIP. */
async function memberNames(source: FileSource): Promise<string[] | null> {
  try {
    return (await openZip(source, { codec: nodeZlibCodec })).entries.map((e) => e.name);
  } catch (e) {
    if (e instanceof TensorportError) return null;
    throw e;
  }
}

export interface Detected {
  format: FormatHandler;
  probe: Probe;
  warnings: Finding[];
}

/** Picks the format for an input path by content; throws UnknownFormat/UnsupportedFormat otherwise. */
export async function detectInput(path: string): Promise<Detected> {
  const p = await probe(path);
  const ext = extname(path).toLowerCase();
  // Content first. A file whose bytes fit no format but whose extension names one is read as that
  // format, so a damaged model.safetensors gets the precise error (e.g. InvalidHeaderLength).
  const format = detectFormat(p) ?? (p.content === 'unknown' ? FORMATS.find((f) => f.extensions.includes(ext)) : undefined);
  if (!format) {
    if (p.isDirectory) {
      throw new TensorportError('UnknownFormat', `${path} is a directory without a checkpoint tensorport can read (expected a *.safetensors.index.json, one *.safetensors file, pytorch_model.bin.index.json or pytorch_model.bin)`, { path });
    }
    const what = CONTENT_NAMES[p.content ?? 'unknown'] ?? p.content;
    const code = p.content === 'unknown' || p.content === null ? 'UnknownFormat' : 'UnsupportedFormat';
    throw new TensorportError(code, `${path} holds ${what}; tensorport reads safetensors, npz, npy and torch checkpoints`, { path });
  }
  const warnings: Finding[] = [];
  if (!p.isDirectory && !format.extensions.includes(ext)) {
    warnings.push({
      code: 'ExtensionMismatch',
      message: `${path} has the extension '${ext || '(none)'}' but its content is ${format.name}; reading it as ${format.name}`,
      path,
    });
  }
  return { format, probe: p, warnings };
}
