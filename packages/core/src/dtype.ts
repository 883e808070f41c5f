import { TensorportError } from './errors.ts';

/**
 * The safetensors dtypes, in the reference's enum order, which is increasing alignment: the writer
 * sorts by this rank descending, so every tensor starts at a multiple of its element size.
 */
export const DTYPES = [
  'BOOL', 'F4', 'F6_E2M3', 'F6_E3M2', 'U8', 'I8', 'F8_E5M2', 'F8_E4M3', 'F8_E8M0', 'F8_E4M3FNUZ',
  'F8_E5M2FNUZ', 'I16', 'U16', 'F16', 'BF16', 'I32', 'U32', 'F32', 'C64', 'F64', 'I64', 'U64',
] as const;

export type DType = (typeof DTYPES)[number];

const BITS: Readonly<Record<DType, number>> = {
  BOOL: 8, F4: 4, F6_E2M3: 6, F6_E3M2: 6, U8: 8, I8: 8, F8_E5M2: 8, F8_E4M3: 8, F8_E8M0: 8,
  F8_E4M3FNUZ: 8, F8_E5M2FNUZ: 8, I16: 16, U16: 16, F16: 16, BF16: 16, I32: 32, U32: 32, F32: 32,
  C64: 64, F64: 64, I64: 64, U64: 64,
};

const RANK = new Map<string, number>(DTYPES.map((d, i) => [d, i]));

export function isDType(name: string): name is DType {
  return RANK.has(name);
}

export function dtypeRank(d: DType): number {
  return RANK.get(d)!;
}

export function dtypeBits(d: DType): number {
  return BITS[d];
}

/** Bytes per element for whole-byte dtypes; sub-byte dtypes have none. */
export function dtypeBytes(d: DType): number | null {
  const bits = BITS[d];
  return bits % 8 === 0 ? bits / 8 : null;
}

/** Element count of a shape, exactly (the reference multiplies left to right with overflow checks). */
export function elementCount(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/**
 * Byte length for `shape` of `dtype`: elements × bits / 8, which must be whole (F4 needs an even
 * element count, F6 a multiple of 4). Throws MisalignedSlice otherwise.
 */
export function byteLength(dtype: DType, shape: readonly number[], tensor?: string): number {
  const bits = BigInt(BITS[dtype]);
  let n = 1n;
  for (const d of shape) n *= BigInt(d);
  const total = n * bits;
  if (total % 8n !== 0n) {
    throw new TensorportError('MisalignedSlice', `${dtype} tensor of shape [${shape.join(', ')}] is not a whole number of bytes`, tensor === undefined ? {} : { tensor });
  }
  const bytes = total / 8n;
  if (bytes > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new TensorportError('ValidationOverflow', `${dtype} tensor of shape [${shape.join(', ')}] is too large`, tensor === undefined ? {} : { tensor });
  }
  return Number(bytes);
}
