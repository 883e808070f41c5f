import { TensorportError, toFinding, type Context, type Finding } from '@tensorport/core';
import { defaultRegistry } from '../registry.ts';
import type { PipelineOptions } from './open.ts';

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
 * Validates a checkpoint without reading more than its checks need. Bad input is a report with
 * `valid: false`, never an exception (an unrecognised input included).
 */
export async function validate(ctx: Context, options: PipelineOptions = {}): Promise<ValidateReport> {
  const path = ctx.name;
  let detected;
  try {
    detected = await (options.registry ?? defaultRegistry).detect(ctx);
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
    return { path, format: null, valid: false, errors: [{ path, ...toFinding(e) }], warnings: [], files: [path] };
  }
  const { format, warnings } = detected;
  if (!format.validate) {
    return { path, format: format.name, valid: false, errors: [{ code: 'UnsupportedFormat', message: `tensorport cannot validate ${format.name} files yet`, path }], warnings, files: [path] };
  }
  const r = await format.validate(ctx, options.read?.[format.name]);
  return { path, format: format.name, valid: r.valid, errors: r.errors, warnings: [...warnings, ...r.warnings], files: r.files };
}
