/** "GGUF" as bytes. */
export const GGUF_MAGIC = new Uint8Array([0x47, 0x47, 0x55, 0x46]);
export const GGUF_VERSION = 3;
export const GGUF_DEFAULT_ALIGNMENT = 32;
export const ALIGNMENT_KEY = 'general.alignment';

/** llama.cpp's GGUF_MAX_STRING_LENGTH and GGUF_MAX_ARRAY_ELEMENTS. */
export const MAX_STRING_LENGTH = 2 ** 30;
export const MAX_ARRAY_ELEMENTS = 2 ** 30;
/** Strings, booleans and nested arrays become one JS object each: a tighter cap over the header. */
export const MAX_HEADER_OBJECTS = 2 ** 24;
/** Nested arrays recurse in the reader; real files use depth 1. */
export const MAX_ARRAY_DEPTH = 8;
/** llama.cpp's GGML_MAX_NAME is 64 including the NUL. */
export const MAX_TENSOR_NAME_BYTES = 63;
/** llama.cpp's GGML_MAX_DIMS. */
export const MAX_DIMS = 4;

export const LITTLE_ENDIAN_HOST = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

export function alignUp(x: number, a: number): number {
  return x + ((a - (x % a)) % a);
}
