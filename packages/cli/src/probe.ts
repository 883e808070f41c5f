import { readdir, stat } from 'node:fs/promises';
import { extname } from 'node:path';
import { TensorportError, identify, type Finding, type Identification } from '@tensorport/core';
import { FileSource, nodeZlibCodec } from '@tensorport/core/node';
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
    // One detection for every command: core's identify (magic numbers, safetensors header, ZIP
    // member names); the coarse fields below are what the format handlers test.
    const identified = await identify(source, { codec: nodeZlibCodec });
    // MLX quantized weights are read by their container's handler (safetensors or npz).
    const content = identified.container === 'npz' ? 'zip' : COARSE[identified.kind];
    const torch = TORCH_KINDS[identified.kind] ?? null;
    const zipMembers = content === 'zip' && torch === null ? (identified.members ?? null) : null;
    return { path, isDirectory: false, content, entries: [], torch, zipMembers, identified };
  } finally {
    await source.close();
  }
}

/** identify's kinds as the handlers' `content` (what the leading bytes are). */
const COARSE: Readonly<Record<Identification['kind'], string>> = {
  safetensors: 'safetensors',
  'mlx-quantized': 'safetensors',
  'safetensors-index': 'json',
  'torch-index': 'json',
  json: 'json',
  npy: 'npy',
  npz: 'zip',
  'torch-zip': 'zip',
  torchscript: 'zip',
  'matlab-live-script': 'zip',
  zip: 'zip',
  'torch-legacy': 'pickle',
  pickle: 'pickle',
  gguf: 'gguf',
  hdf5: 'hdf5',
  onnx: 'onnx',
  empty: 'unknown',
  unknown: 'unknown',
};

/** TorchScript goes to the torch reader, which refuses it precisely (TorchUnsupportedArchive). */
const TORCH_KINDS: Partial<Record<Identification['kind'], 'torch-zip' | 'torch-legacy'>> = {
  'torch-zip': 'torch-zip',
  torchscript: 'torch-zip',
  'torch-legacy': 'torch-legacy',
};

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
    const what = p.identified ? `${p.identified.what} (${p.identified.can})` : (CONTENT_NAMES[p.content ?? 'unknown'] ?? p.content);
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
