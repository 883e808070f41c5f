export { type DeflateCodec, type Crc32Fn } from './codec.ts';
export { crc32 } from './crc32.ts';
export { openZip, DEFAULT_MAX_ZIP_ENTRIES, DEFAULT_MAX_CENTRAL_DIRECTORY, ZipArchive, type ZipEntry, type ZipReadOptions, type ZipStreamOptions } from './reader.ts';
export { isPatchableSink, EXTRA_TORCH_PADDING, ZipWriter, type PatchableSink, type ZipWriterOptions, type ZipMemberOptions, type ZipMemberResult } from './writer.ts';
export type { CentralEntry } from './central-directory.ts';
export { METHOD_DEFLATED, METHOD_STORED } from './central-directory.ts';
