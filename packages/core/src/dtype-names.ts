import { isDType, type DType } from './dtype.ts';

/**
 * The names other tools give safetensors' dtypes: torch (`torch.float8_e4m3fn`), ml_dtypes and
 * numpy (`float8_e4m3fn`, `bfloat16`, `float32`) and their short forms (`f8_e4m3fn`, `f32`). The
 * `fn`/`fnu` suffixes say "finite, no infinities" (and unsigned), which the safetensors names
 * leave implicit: F8_E4M3 is torch's float8_e4m3fn, F8_E8M0 its float8_e8m0fnu.
 */
const ALIASES: Readonly<Record<string, DType>> = {
  bool: 'BOOL',
  uint8: 'U8', int8: 'I8', uint16: 'U16', int16: 'I16', uint32: 'U32', int32: 'I32', uint64: 'U64', int64: 'I64',
  float16: 'F16', half: 'F16', bfloat16: 'BF16', float32: 'F32', float: 'F32', float64: 'F64', double: 'F64', complex64: 'C64',
  float8_e4m3fn: 'F8_E4M3', float8_e4m3: 'F8_E4M3', float8_e5m2: 'F8_E5M2', float8_e8m0fnu: 'F8_E8M0',
  float8_e4m3fnuz: 'F8_E4M3FNUZ', float8_e5m2fnuz: 'F8_E5M2FNUZ',
  float4_e2m1fn: 'F4', float6_e2m3fn: 'F6_E2M3', float6_e3m2fn: 'F6_E3M2',
};

/** A dtype from its safetensors name (any case) or torch's, ml_dtypes' or numpy's; null when unknown. */
export function dtypeFromName(name: string): DType | null {
  const upper = name.toUpperCase();
  if (isDType(upper)) return upper;
  const n = name.toLowerCase().replace(/^(torch|np|numpy|ml_dtypes)\./, '');
  const long = /^[fiu][0-9]/.test(n) ? n.replace(/^f(?=[0-9])/, 'float').replace(/^i(?=[0-9])/, 'int').replace(/^u(?=[0-9])/, 'uint') : n;
  return ALIASES[long] ?? ALIASES[n] ?? null;
}
