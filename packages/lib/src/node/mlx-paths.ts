/**
 * The MLX commands by paths: `convertPath` with an MLX step (mlx-steps.ts). A directory output is
 * the mlx-lm model directory with its config.json and the input model's side files; a file output
 * is any format the registry writes. Every output option of convert applies (force, fsync, verify,
 * to, jobs, maxShardSize, metadata).
 */
import { dequantizeStep, quantizeStep, repackStep, type DequantizeSettings, type MlxReport, type MlxStep, type QuantizeSettings, type RepackSettings } from '../mlx-steps.ts';
import { convertPath, type ConvertPathOptions, type ConvertPathResult } from './paths.ts';

/** convertPath's options, less the ones the MLX step decides (the transform, a cast, GGUF's own). */
export type MlxPathOptions = Omit<ConvertPathOptions, 'transform' | 'dtype' | 'gguf'>;

export type MlxPathResult = MlxReport & Pick<ConvertPathResult, 'input' | 'output'>;

async function run(options: MlxPathOptions, s: MlxStep): Promise<MlxPathResult> {
  const r = await convertPath({ ...options, transform: s.transform });
  return { ...s.report(r), input: r.input, output: r.output };
}

/** `tensorport quantize`. */
export function quantizePath(options: MlxPathOptions & QuantizeSettings): Promise<MlxPathResult> {
  const { bits, groupSize, mode, recipe, bitsFor, rounding, ...rest } = options;
  const settings: QuantizeSettings = { bits, groupSize, mode, recipe, bitsFor, rounding };
  return run(rest, quantizeStep(defined(settings)));
}

/** `tensorport dequantize`. */
export function dequantizePath(options: MlxPathOptions & DequantizeSettings): Promise<MlxPathResult> {
  const { dtype, rounding, globalScale, bits, groupSize, mode, ...rest } = options;
  return run(rest, dequantizeStep(defined({ dtype, rounding, globalScale, bits, groupSize, mode })));
}

/** `tensorport repack`. */
export function repackPath(options: MlxPathOptions & RepackSettings): Promise<MlxPathResult> {
  const { bits, groupSize, rounding, ...rest } = options;
  return run(rest, repackStep(defined({ bits, groupSize, rounding }) as RepackSettings));
}

/** The settings that were given (exactOptionalPropertyTypes-style: no key holds undefined). */
function defined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
