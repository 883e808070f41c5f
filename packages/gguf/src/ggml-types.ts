import type { DType } from '@tensorport/core';

/**
 * One ggml tensor type as GGUF stores it: `blockSize` elements along ne[0] take `typeSize` bytes.
 * `dtype` is set for the plain element types, which map one-to-one onto a safetensors dtype.
 */
export interface GgmlType {
  readonly id: number;
  readonly name: string;
  readonly blockSize: number;
  readonly typeSize: number;
  readonly dtype?: DType;
}

// Ids and sizes are ggml.h / GGML_QUANT_SIZES (gguf 0.19.0). Removed ids (4, 5, 31-33, 36-38) and
// Q8_1/Q8_K (compute intermediates, never stored; gguf-py's Q8_1 size disagrees with the C struct)
// are absent, so a file using them fails as an unknown type.
const TYPES: readonly GgmlType[] = [
  { id: 0, name: 'F32', blockSize: 1, typeSize: 4, dtype: 'F32' },
  { id: 1, name: 'F16', blockSize: 1, typeSize: 2, dtype: 'F16' },
  { id: 2, name: 'Q4_0', blockSize: 32, typeSize: 18 },
  { id: 3, name: 'Q4_1', blockSize: 32, typeSize: 20 },
  { id: 6, name: 'Q5_0', blockSize: 32, typeSize: 22 },
  { id: 7, name: 'Q5_1', blockSize: 32, typeSize: 24 },
  { id: 8, name: 'Q8_0', blockSize: 32, typeSize: 34 },
  { id: 10, name: 'Q2_K', blockSize: 256, typeSize: 84 },
  { id: 11, name: 'Q3_K', blockSize: 256, typeSize: 110 },
  { id: 12, name: 'Q4_K', blockSize: 256, typeSize: 144 },
  { id: 13, name: 'Q5_K', blockSize: 256, typeSize: 176 },
  { id: 14, name: 'Q6_K', blockSize: 256, typeSize: 210 },
  { id: 16, name: 'IQ2_XXS', blockSize: 256, typeSize: 66 },
  { id: 17, name: 'IQ2_XS', blockSize: 256, typeSize: 74 },
  { id: 18, name: 'IQ3_XXS', blockSize: 256, typeSize: 98 },
  { id: 19, name: 'IQ1_S', blockSize: 256, typeSize: 50 },
  { id: 20, name: 'IQ4_NL', blockSize: 32, typeSize: 18 },
  { id: 21, name: 'IQ3_S', blockSize: 256, typeSize: 110 },
  { id: 22, name: 'IQ2_S', blockSize: 256, typeSize: 82 },
  { id: 23, name: 'IQ4_XS', blockSize: 256, typeSize: 136 },
  { id: 24, name: 'I8', blockSize: 1, typeSize: 1, dtype: 'I8' },
  { id: 25, name: 'I16', blockSize: 1, typeSize: 2, dtype: 'I16' },
  { id: 26, name: 'I32', blockSize: 1, typeSize: 4, dtype: 'I32' },
  { id: 27, name: 'I64', blockSize: 1, typeSize: 8, dtype: 'I64' },
  { id: 28, name: 'F64', blockSize: 1, typeSize: 8, dtype: 'F64' },
  { id: 29, name: 'IQ1_M', blockSize: 256, typeSize: 56 },
  { id: 30, name: 'BF16', blockSize: 1, typeSize: 2, dtype: 'BF16' },
  { id: 34, name: 'TQ1_0', blockSize: 256, typeSize: 54 },
  { id: 35, name: 'TQ2_0', blockSize: 256, typeSize: 66 },
  { id: 39, name: 'MXFP4', blockSize: 32, typeSize: 17 },
  { id: 40, name: 'NVFP4', blockSize: 64, typeSize: 36 },
  { id: 41, name: 'Q1_0', blockSize: 128, typeSize: 18 },
  { id: 42, name: 'Q2_0', blockSize: 64, typeSize: 18 },
];

const BY_ID = new Map(TYPES.map((t) => [t.id, t]));
const BY_NAME = new Map(TYPES.map((t) => [t.name, t]));

export const GGML_TYPES: readonly GgmlType[] = TYPES;

export function ggmlTypeById(id: number): GgmlType | undefined {
  return BY_ID.get(id);
}

export function ggmlTypeByName(name: string): GgmlType | undefined {
  return BY_NAME.get(name);
}

/** Bits per weight (block bytes × 8 / block elements). */
export function bitsPerWeight(t: GgmlType): number {
  return (t.typeSize * 8) / t.blockSize;
}
