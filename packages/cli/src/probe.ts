/**
 * Detection for the commands that need a path's format before the library's pipeline runs (MLX
 * input, identify): the library's registry over a path's context.
 */
export { openPath, pathContext, withPath, type OpenedPath } from 'tensorport/node';
