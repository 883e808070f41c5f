/**
 * The command line as a library: `main` runs it without exiting. Everything else is the
 * `tensorport` library's (re-exported here under the names this package always had).
 */
export { VERSION } from './version.ts';
export { convert, type ConvertOptions, type ConvertResult, type TargetDtype } from './convert.ts';
export { inspect, type InspectReport, type InspectTensor, type DtypeTotal } from './inspect.ts';
export { validate, type ValidateReport } from './validate.ts';
export { FORMATS, createRegistry, defaultRegistry, type AnyFormat, type Registry } from 'tensorport';
export { diffPaths, scanPath, type ConvertPathOptions } from 'tensorport/node';
export { parseSize, formatBytes } from './size.ts';
export { main, EXIT_OK, EXIT_FAILED, EXIT_USAGE, type CliIO } from './program.ts';
export { quantize, dequantize, repack, type QuantizeOptions, type DequantizeOptions, type RepackOptions, type MlxCommandResult, type MlxLayerInfo, type RepackReportEntry } from './mlx/run.ts';
export { identifyPath, type IdentifyReport } from './commands/identify.ts';
export type { DiffPathsOptions, DiffPathsResult } from './commands/diff.ts';
