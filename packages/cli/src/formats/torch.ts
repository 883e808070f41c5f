import { stat } from 'node:fs/promises';
import { extname, resolve } from 'node:path';
import { TensorportError, toFinding, type Finding } from '@tensorport/core';
import { FileSource, nodeZlibCodec } from '@tensorport/core/node';
import { allowedGlobals, scanCheckpoint, validateTorchCheckpoint, type OpenTorchOptions, type ScanReport, type TorchCheckpoint } from '@tensorport/torch-zip';
import { openTorchCheckpointFile, writeTorchCheckpointFile } from '@tensorport/torch-zip/node';
import { withProgress } from './npz.ts';
import type { FormatHandler, OpenOptions, Probe, ValidationReport } from './registry.ts';
import { TORCH_INDEX_FILE, TORCH_SINGLE_FILE, isShardedTorchPath, openShardedTorch, validateShardedTorch } from './torch-sharded.ts';

export const TORCH_EXTENSIONS = ['.pt', '.pth', '.bin', '.ckpt'];

export function torchOpenOptions(options: OpenOptions | undefined): OpenTorchOptions {
  return {
    zipCodec: nodeZlibCodec,
    ...(options?.select === undefined ? {} : { select: options.select }),
    ...(options?.keepAliases ? { keepAliases: true } : {}),
  };
}

/** Scans a file's pickles (never running them): the report `tensorport scan` prints. */
export async function scanFile(path: string): Promise<ScanReport> {
  const source = await FileSource.open(path);
  try {
    return await scanCheckpoint(source, { path, zipCodec: nodeZlibCodec });
  } finally {
    await source.close();
  }
}

/** The globals of a scan that are not on the allowlist, `module.name`. */
export function disallowedGlobals(report: ScanReport): string[] {
  const allowed = new Set(allowedGlobals());
  return report.globals.filter((g) => !allowed.has(g));
}

/**
 * A checkpoint is scanned before it is opened, so a refusal names every offending global (the
 * reader would stop at the first) and nothing is read from an unsafe file.
 */
export async function openTorchFile(path: string, options?: OpenOptions): Promise<TorchCheckpoint> {
  const scan = await scanFile(path);
  if (!scan.safe) throw unsafe(path, scan);
  return openTorchCheckpointFile(path, torchOpenOptions(options));
}

function unsafe(path: string, scan: ScanReport): TensorportError {
  const bad = disallowedGlobals(scan);
  if (bad.length > 0) {
    return new TensorportError('PickleDisallowedGlobal', `${path} is unsafe: its pickle references ${bad.join(', ')} (run 'tensorport scan ${path}' for every finding)`, { path });
  }
  const first = scan.findings[0]!;
  return new TensorportError(first.code as 'PickleInvalid', `${path} is unsafe: ${first.message}`, { path });
}

/** PyTorch `torch.save` files (ZIP or legacy) and transformers' sharded `pytorch_model*.bin` directories. */
export const torchFormat: FormatHandler = {
  name: 'torch',
  extensions: TORCH_EXTENSIONS,

  detect(p: Probe): boolean {
    if (p.isDirectory) return p.entries.includes(TORCH_INDEX_FILE) || p.entries.includes(TORCH_SINGLE_FILE);
    if (p.content === 'json') return p.path.endsWith('.bin.index.json');
    return (p.content === 'zip' || p.content === 'pickle') && (p.torch ?? null) !== null;
  },

  async open(path, options) {
    return (await isShardedTorchPath(path)) ? openShardedTorch(path, options) : openTorchFile(path, options);
  },

  async write(tensors, metadata, outPath, options) {
    const ext = extname(outPath).toLowerCase();
    if (!TORCH_EXTENSIONS.includes(ext)) {
      throw new TensorportError('InvalidOption', `a torch output is one file ending in ${TORCH_EXTENSIONS.join(', ')}; got ${outPath}`, { path: outPath });
    }
    await writeTorchCheckpointFile({ tensors: withProgress(tensors, options), metadata }, outPath, { force: options.force, fsync: options.fsync !== false, inputs: options.inputs });
    return { files: [resolve(outPath)], bytes: (await stat(outPath)).size };
  },

  async validate(path, options) {
    if (await isShardedTorchPath(path)) return validateShardedTorch(path, options);
    return validateTorchFile(path, options);
  },
};

/** Full scan, then a full read (structure, every storage's size and every tensor's extent). */
export async function validateTorchFile(path: string, options?: OpenOptions): Promise<ValidationReport> {
  let source: FileSource;
  try {
    source = await FileSource.open(path);
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
    return { valid: false, errors: [{ path, ...toFinding(e) }], warnings: [], files: [path] };
  }
  try {
    const r = await validateTorchCheckpoint(source, torchOpenOptions(options));
    const at = (f: Finding): Finding => (f.path === undefined ? { ...f, path } : f);
    return { valid: r.valid, errors: r.errors.map(at), warnings: r.warnings.map(at), files: [path] };
  } finally {
    await source.close();
  }
}
