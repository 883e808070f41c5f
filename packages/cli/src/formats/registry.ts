import type { Checkpoint, Finding, Identification, TensorDescriptor } from '@tensorport/core';
import { npyFormat, npzFormat } from './npz.ts';
import { safetensorsFormat } from './safetensors.ts';
import { torchFormat } from './torch.ts';

/** What the CLI learned about an input path before choosing a reader. */
export interface Probe {
  path: string;
  isDirectory: boolean;
  /** Files: what the leading bytes look like (core's `detectSource`). Directories: null. */
  content: string | null;
  /** Directories: the entry names, sorted. Files: empty. */
  entries: readonly string[];
  /** ZIP files: what `sniffTorchCheckpoint` says (also for legacy pickles); other files: null. */
  torch?: 'torch-zip' | 'torch-legacy' | null;
  /** ZIP files that are not torch archives: member names, or null when the directory is unreadable. */
  zipMembers?: readonly string[] | null;
  /** Files: core's `identify` result, which the fields above are derived from. */
  identified?: Identification;
}

/** Reader options; each format uses the ones that concern it. */
export interface OpenOptions {
  /** npz/npy: the dtype a `<V1` array holds (ml_dtypes writes float8 variants that way). */
  void1?: string;
  /** torch: dotted path of the subtree holding the tensors (`state_dict`, `model`). */
  select?: string;
  /** torch: write tied weights under every name instead of once. */
  keepAliases?: boolean;
  /** npy: the tensor name (default: the file stem). */
  name?: string;
}

export interface WriteOptions {
  /** npz: deflate members (np.savez_compressed); stored by default. */
  compress?: boolean;
  /** Replace existing output files. */
  force: boolean;
  /** fsync each output before it is renamed into place (default true: a crash cannot leave an empty file under the output's name). */
  fsync?: boolean;
  /** Directory outputs: largest shard in tensor bytes. */
  maxShardSize?: number;
  /** Paths being read; an output that would replace one of them is refused (SameInputOutput). */
  inputs: readonly string[];
  onProgress?: (done: number, total: number) => void;
}

export interface WriteResult {
  /** Every file written, absolute paths. */
  files: string[];
  /** Bytes written, all files together. */
  bytes: number;
}

export interface ValidationReport {
  valid: boolean;
  errors: Finding[];
  warnings: Finding[];
  /** The files that were checked. */
  files: string[];
}

/**
 * One checkpoint format as the CLI sees it. Adding a format (NPZ, torch, MLX…) is one object like
 * `safetensorsFormat` plus its entry in FORMATS; inspect, validate and convert find it by `detect`.
 */
export interface FormatHandler {
  /** Short name used in messages and in `convert({ to })`. */
  readonly name: string;
  /** Extensions that usually hold this format; an input with another extension gets a warning. */
  readonly extensions: readonly string[];
  /** True when the probed path holds this format (by content or directory layout, not by name). */
  detect(probe: Probe): boolean;
  /** Opens without reading tensor data. */
  open(path: string, options?: OpenOptions): Promise<Checkpoint>;
  /**
   * Writes `outPath`: a file path gets one file; a directory (existing, or a path ending in '/')
   * gets the format's file names. All or nothing; existing files are refused unless `force`.
   */
  write?(tensors: readonly TensorDescriptor[], metadata: ReadonlyMap<string, string> | null, outPath: string, options: WriteOptions): Promise<WriteResult>;
  /** Checks a path in this format completely; never throws on bad input. */
  validate?(path: string, options?: OpenOptions): Promise<ValidationReport>;
}

// Torch before npz: both are ZIPs, torch's is recognised by its first member.
export const FORMATS: readonly FormatHandler[] = [safetensorsFormat, torchFormat, npzFormat, npyFormat];

export function formatByName(name: string): FormatHandler | undefined {
  return FORMATS.find((f) => f.name === name);
}

export function detectFormat(probe: Probe): FormatHandler | undefined {
  return FORMATS.find((f) => f.detect(probe));
}
