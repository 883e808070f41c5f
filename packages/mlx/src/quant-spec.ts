import type { QuantMode, QuantParams } from './config.ts';
import type { TensorInfo } from './layers.ts';

/**
 * `to_quantized` keyword arguments as a predicate returns them (mlx-lm's dicts). `groupSize: null`
 * is what mlx-lm's mixed recipes write when no group size was given; it means the mode's default.
 */
export interface QuantSpec {
  groupSize?: number | null;
  bits?: number;
  mode?: QuantMode;
}

/** Return false to keep a tensor float, true for the run's settings, or a spec of its own. */
export type QuantPredicate = (tensor: TensorInfo & { path: string }, defaults: QuantParams) => boolean | QuantSpec;
