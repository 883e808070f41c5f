import { TensorportError, toFinding, type Context, type Finding } from '@tensorport/core';
import { readConfig } from '@tensorport/mlx';
import { hfQuantCheck } from '../hf-quant.ts';
import { defaultRegistry } from '../registry.ts';
import { openInput, type PipelineOptions } from './open.ts';

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
  const errors = [...r.errors, ...(r.valid ? await quantizationProblems(ctx, options) : [])];
  return { path, format: format.name, valid: errors.length === 0, errors, warnings: [...warnings, ...r.warnings], files: r.files };
}

/** A valid file whose config.json names a quantization: the tensors that scheme needs, checked (FP8 scale shapes). */
async function quantizationProblems(ctx: Context, options: PipelineOptions): Promise<Finding[]> {
  // Only then is the input opened again (a torch file's pickles are not run twice for nothing).
  const config = await readConfig(ctx).catch(() => undefined);
  if (config?.quantization_config === undefined) return [];
  const { checkpoint } = await openInput(ctx, options);
  try {
    return (await hfQuantCheck(ctx, checkpoint.tensors)).problems.map((f) => ({ path: ctx.name, ...f }));
  } finally {
    await checkpoint.close();
  }
}
