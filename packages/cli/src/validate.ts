import { TensorportError, toFinding, type Finding } from '@tensorport/core';
import type { OpenOptions } from './formats/registry.ts';
import { detectInput } from './probe.ts';

export interface ValidateReport {
  path: string;
  /** The detected format, or null when none was recognised. */
  format: string | null;
  valid: boolean;
  errors: Finding[];
  warnings: Finding[];
  /** The files that were checked (a sharded checkpoint: its index and every shard). */
  files: string[];
}

/**
 * Validates a checkpoint without reading tensor data. Bad input is a report with `valid: false`,
 * never an exception (an unreadable or unrecognised path included).
 */
export async function validate(path: string, options?: OpenOptions): Promise<ValidateReport> {
  let detected;
  try {
    detected = await detectInput(path);
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
    return { path, format: null, valid: false, errors: [{ path, ...toFinding(e) }], warnings: [], files: [path] };
  }
  const { format, warnings } = detected;
  if (!format.validate) {
    return {
      path,
      format: format.name,
      valid: false,
      errors: [{ code: 'UnsupportedFormat', message: `tensorport cannot validate ${format.name} files yet`, path }],
      warnings,
      files: [path],
    };
  }
  const r = await format.validate(path, options);
  return { path, format: format.name, valid: r.valid, errors: r.errors, warnings: [...warnings, ...r.warnings], files: r.files };
}
