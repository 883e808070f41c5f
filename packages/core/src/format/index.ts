export type { Context, Folder, Format, OutputTarget, ValidationReport, WriteCommon, WriteResult } from './types.ts';
export { FolderContext, HEAD_BYTES, type ContextOptions } from './context.ts';
export { MemoryFolder, MemoryTarget, memoryContext } from './memory.ts';
export { withProgress, extensionOf, baseName } from './progress.ts';
