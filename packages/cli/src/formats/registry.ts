import type { Checkpoint, Finding, TensorDescriptor } from '@tensorport/core';
import { safetensorsFormat } from './safetensors.ts';

/** What the CLI learned about an input path before choosing a reader. */
export interface Probe {
  path: string;
  isDirectory: boolean;
  /** Files: what the leading bytes look like (core's `detectSource`). Directories: null. */
  content: string | null;
  /** Directories: the entry names, sorted. Files: empty. */
  entries: readonly string[];
}

export interface WriteOptions {
  /** Replace existing output files. */
  force: boolean;
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
  open(path: string): Promise<Checkpoint>;
  /**
   * Writes `outPath`: a file path gets one file; a directory (existing, or a path ending in '/')
   * gets the format's file names. All or nothing; existing files are refused unless `force`.
   */
  write?(tensors: readonly TensorDescriptor[], metadata: ReadonlyMap<string, string> | null, outPath: string, options: WriteOptions): Promise<WriteResult>;
  /** Checks a path in this format completely; never throws on bad input. */
  validate?(path: string): Promise<ValidationReport>;
}

export const FORMATS: readonly FormatHandler[] = [safetensorsFormat];

export function formatByName(name: string): FormatHandler | undefined {
  return FORMATS.find((f) => f.name === name);
}

export function detectFormat(probe: Probe): FormatHandler | undefined {
  return FORMATS.find((f) => f.detect(probe));
}
