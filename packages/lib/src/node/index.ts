/**
 * tensorport in Node: contexts from paths, file targets with the output policy, and the path forms
 * of the pipeline that the command line runs.
 */
export * from '../index.ts';
export { configureRemote, NodeFolder, openPath, pathContext, withPath, type OpenedPath } from './folder.ts';
export { FileTarget, type FileTargetOptions } from './target.ts';
export { convertPath, diffPaths, formatForOutput, inspectPath, scanPath, validatePath, type ConvertPathOptions, type ConvertPathResult } from './paths.ts';
export { dequantizePath, quantizePath, repackPath, type MlxPathOptions, type MlxPathResult } from './mlx-paths.ts';
export { identifyPath, type IdentifyReport } from './identify-path.ts';
export { isDirectoryPath, scanFileAsTree, scanTree, type TreeEntry, type TreeScan } from './scan-tree.ts';
export { EMPTY_DIRECTORY, outputState, removeEmptyDirectory } from './output-state.ts';
export { setStaleFileReporter } from '@tensorport/core/node';
