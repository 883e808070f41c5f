/**
 * tensorport's command line as a library: the same checks and outputs as `tensorport convert`,
 * `inspect` and `validate`, without printing or exiting.
 */
export { VERSION } from './version.ts';
export { convert, type ConvertOptions, type ConvertResult, type TargetDtype } from './convert.ts';
export { inspect, type InspectReport, type InspectTensor, type DtypeTotal } from './inspect.ts';
export { validate, type ValidateReport } from './validate.ts';
export { FORMATS, detectFormat, formatByName, type FormatHandler, type Probe, type WriteOptions, type WriteResult, type ValidationReport } from './formats/registry.ts';
export { probe, detectInput } from './probe.ts';
export { parseSize, formatBytes } from './size.ts';
export { main, EXIT_OK, EXIT_FAILED, EXIT_USAGE, type CliIO } from './program.ts';
export { quantize, dequantize, repack, type QuantizeOptions, type DequantizeOptions, type RepackOptions, type MlxCommandResult, type MlxLayerInfo, type RepackReportEntry } from './mlx/run.ts';
export { identifyPath, type IdentifyReport } from './commands/identify.ts';
export { diffPaths, type DiffPathsOptions, type DiffPathsResult } from './commands/diff.ts';
