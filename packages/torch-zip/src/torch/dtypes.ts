import type { DType } from '@tensorport/core';

/**
 * torch dtypes as pickles name them (`str(torch.float32)` is `torch.float32`), with their element
 * size, the safetensors dtype they convert to (null: no safetensors equivalent), and the legacy
 * storage class that carries them in `_rebuild_tensor_v2` files. Dtypes without a storage class
 * (torch >= 2.1 `_new_dtypes`) travel as `UntypedStorage` + a dtype argument (`_rebuild_tensor_v3`).
 */
interface DtypeInfo {
  readonly bytes: number;
  readonly safetensors: DType | null;
  readonly storage: string | null;
  /** Complex dtypes are byte-swapped per component. */
  readonly complex?: true;
  /** Two 4-bit values per byte: safetensors counts values, torch counts bytes. */
  readonly packed?: true;
}

const row = (bytes: number, safetensors: DType | null, storage: string | null = null, extra: Partial<DtypeInfo> = {}): DtypeInfo =>
  ({ bytes, safetensors, storage, ...extra });

export const TORCH_DTYPES = {
  float64: row(8, 'F64', 'DoubleStorage'),
  float32: row(4, 'F32', 'FloatStorage'),
  float16: row(2, 'F16', 'HalfStorage'),
  bfloat16: row(2, 'BF16', 'BFloat16Storage'),
  int64: row(8, 'I64', 'LongStorage'),
  int32: row(4, 'I32', 'IntStorage'),
  int16: row(2, 'I16', 'ShortStorage'),
  int8: row(1, 'I8', 'CharStorage'),
  uint8: row(1, 'U8', 'ByteStorage'),
  bool: row(1, 'BOOL', 'BoolStorage'),
  complex64: row(8, 'C64', 'ComplexFloatStorage', { complex: true }),
  complex128: row(16, null, 'ComplexDoubleStorage', { complex: true }),
  qint8: row(1, null, 'QInt8Storage'),
  quint8: row(1, null, 'QUInt8Storage'),
  qint32: row(4, null, 'QInt32Storage'),
  quint4x2: row(1, null, 'QUInt4x2Storage'),
  quint2x4: row(1, null, 'QUInt2x4Storage'),
  float8_e5m2: row(1, 'F8_E5M2'),
  float8_e4m3fn: row(1, 'F8_E4M3'),
  float8_e5m2fnuz: row(1, 'F8_E5M2FNUZ'),
  float8_e4m3fnuz: row(1, 'F8_E4M3FNUZ'),
  float8_e8m0fnu: row(1, 'F8_E8M0'),
  float4_e2m1fn_x2: row(1, 'F4', null, { packed: true }),
  uint16: row(2, 'U16'),
  uint32: row(4, 'U32'),
  uint64: row(8, 'U64'),
  complex32: row(4, null, null, { complex: true }),
  bits8: row(1, null), bits16: row(2, null), bits1x8: row(1, null), bits2x4: row(1, null), bits4x2: row(1, null),
  uint1: row(1, null), uint2: row(1, null), uint3: row(1, null), uint4: row(1, null), uint5: row(1, null), uint6: row(1, null), uint7: row(1, null),
  int1: row(1, null), int2: row(1, null), int3: row(1, null), int4: row(1, null), int5: row(1, null), int6: row(1, null), int7: row(1, null),
} as const satisfies Record<string, DtypeInfo>;

export type TorchDtype = keyof typeof TORCH_DTYPES;

export function dtypeInfo(d: TorchDtype): DtypeInfo {
  return TORCH_DTYPES[d];
}

/** The torch dtype a safetensors dtype is written as (the inverse of the table, first match). */
export function torchDtypeFor(st: DType): TorchDtype | null {
  for (const [name, info] of Object.entries(TORCH_DTYPES) as [TorchDtype, DtypeInfo][]) {
    if (info.safetensors === st) return name;
  }
  return null;
}
