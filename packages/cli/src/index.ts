/**
 * The command line as a library: `main` runs it without exiting. Everything else is the
 * `tensorport` library's (re-exported here under the names this package always had).
 */
export { VERSION } from './version.ts';
export {
  convertPath as convert, inspectPath as inspect, validatePath as validate, diffPaths, scanPath,
  type ConvertPathOptions, type ConvertPathOptions as ConvertOptions, type ConvertPathResult as ConvertResult,
} from 'tensorport/node';
export type { CastTarget as TargetDtype } from '@tensorport/core';
export { FORMATS, createRegistry, defaultRegistry, type AnyFormat, type Registry, type InspectReport, type InspectTensor, type DtypeTotal, type ValidateReport } from 'tensorport';
export { parseSize, formatBytes } from './size.ts';
export { main, type CliIO } from './program.ts';
export { EXIT_OK, EXIT_FAILED, EXIT_USAGE, type CommandContext, type RegisterCommand } from './commands/context.ts';
export { quantize, dequantize, repack, type QuantizeOptions, type DequantizeOptions, type RepackOptions, type MlxCommandResult, type MlxLayerInfo, type RepackReportEntry } from './mlx/commands.ts';
export { identifyPath, type IdentifyReport } from './commands/identify.ts';
export type { DiffPathsOptions, DiffPathsResult } from './commands/diff.ts';
