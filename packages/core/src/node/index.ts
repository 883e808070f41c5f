export {};
export * from './zlib.ts';
