export * from './codec.ts';
export * from './crc32.ts';
export * from './reader.ts';
export * from './writer.ts';
export type { CentralEntry } from './central-directory.ts';
export { METHOD_DEFLATED, METHOD_STORED } from './central-directory.ts';
