import { TensorportError, dtypeBytes, type DType, type Finding } from '@tensorport/core';

/** How a descr's bytes become a safetensors dtype. */
export interface NpyDtype {
  readonly dtype: DType;
  /** Bytes to reverse per unit when the descr is big-endian (a complex swaps each half); 0 for none. */
  readonly swap: number;
}

export interface DescrOptions {
  /** The dtype `<V1` stands for (ml_dtypes writes float8 and int4 variants as `<V1`; the variant is lost). */
  void1?: DType;
}

const INTS: Record<number, [DType, DType]> = { 1: ['I8', 'U8'], 2: ['I16', 'U16'], 4: ['I32', 'U32'], 8: ['I64', 'U64'] };
const FLOATS: Record<number, DType> = { 1: 'F8_E5M2', 2: 'F16', 4: 'F32', 8: 'F64' };

/**
 * Maps a numpy typestr (`dtype.str`, as np.save writes it) to a dtype. Everything safetensors
 * cannot hold is refused by name: objects (pickles), strings, datetimes, complex128, long double,
 * raw voids, structured dtypes.
 */
export function descrToDtype(descr: unknown, tensor: string, options: DescrOptions, warn: (f: Finding) => void): NpyDtype {
  const refuse = (what: string, why: string): never => {
    throw new TensorportError('NpyUnsupportedDtype', `${tensor}: ${what}: ${why}`, { tensor });
  };
  if (Array.isArray(descr)) refuse('structured dtype (a list descr)', 'safetensors tensors have one element type; save each field as its own array');
  if (typeof descr !== 'string') {
    throw new TensorportError('NpyInvalidHeader', `${tensor}: 'descr' must be a string or a list`, { tensor });
  }
  const m = /^([<>|=]?)([a-zA-Z])(\d*)(\[[A-Za-z0-9]+\])?$/.exec(descr);
  if (!m) return refuse(`descr ${JSON.stringify(descr)}`, 'not a numpy typestr');
  const [, order, kind, digits, unit] = m as unknown as [string, string, string, string, string | undefined];
  const size = digits === '' ? 0 : Number(digits);
  const q = `descr ${JSON.stringify(descr)}`;
  const big = order === '>';
  const plain = (dtype: DType, unitBytes = size): NpyDtype => ({ dtype, swap: big && unitBytes > 1 ? unitBytes : 0 });
  if (unit !== undefined && kind !== 'M' && kind !== 'm') return refuse(q, 'not a numpy typestr');
  switch (kind) {
    case 'b':
      if (size === 1) return plain('BOOL');
      break;
    case 'i':
    case 'u': {
      const pair = INTS[size];
      if (pair) return plain(kind === 'i' ? pair[0] : pair[1]);
      break;
    }
    case 'f': {
      if (size === 16 || size === 12 || size === 10) return refuse(`${q} (long double)`, 'its layout is platform-specific and safetensors has no such dtype');
      const f = FLOATS[size];
      if (f === 'F8_E5M2') {
        warn({ code: 'NpyF1AsF8E5M2', message: `${tensor}: descr '<f1' read as F8_E5M2 (ml_dtypes float8_e5m2; plain numpy cannot load it)`, tensor });
      }
      if (f) return plain(f);
      break;
    }
    case 'c':
      if (size === 8) return plain('C64', 4);
      if (size === 16) return refuse(`${q} (complex128)`, 'safetensors has C64 (complex64) only; cast to complex64 first');
      if (size === 32 || size === 24 || size === 20) return refuse(`${q} (complex long double)`, 'safetensors has C64 (complex64) only');
      break;
    case 'V':
      if (size === 2) {
        warn({ code: 'NpyV2AsBF16', message: `${tensor}: descr ${JSON.stringify(descr)} read as BF16 (the ml_dtypes/JAX/MLX convention for bfloat16)`, tensor });
        return { dtype: 'BF16', swap: 0 };
      }
      if (size === 1) {
        const d = options.void1;
        if (d === undefined) return refuse(q, "ml_dtypes writes every float8 variant (and int4) as '<V1', so the type is lost; name it with the void1 option");
        if (dtypeBytes(d) !== 1) return refuse(q, `void1 names ${d}, which is not one byte per element`);
        return { dtype: d, swap: 0 };
      }
      return refuse(`${q} (raw void)`, 'raw bytes have no safetensors dtype');
    case 'O':
      return refuse(`${q} (object array)`, 'object arrays are pickles, which are never loaded');
    case 'S':
    case 'a':
    case 'U':
      return refuse(`${q} (string)`, 'safetensors holds numbers only');
    case 'M':
    case 'm':
      return refuse(`${q} (${kind === 'M' ? 'datetime64' : 'timedelta64'})`, 'safetensors has no time types; view as int64 if the unit is known');
  }
  return refuse(q, 'no safetensors dtype');
}

/**
 * The descr numpy would write for a dtype. BF16 is `<V2` and byte-wide float8s other than E5M2
 * are `<V1` (ml_dtypes' conventions); sub-byte types have no npy form.
 */
export function dtypeToDescr(dtype: DType, tensor: string, warn: (f: Finding) => void): string {
  const fixed: Partial<Record<DType, string>> = {
    BOOL: '|b1', I8: '|i1', U8: '|u1', I16: '<i2', U16: '<u2', I32: '<i4', U32: '<u4', I64: '<i8', U64: '<u8',
    F16: '<f2', F32: '<f4', F64: '<f8', C64: '<c8', BF16: '<V2', F8_E5M2: '<f1',
  };
  const d = fixed[dtype];
  if (dtype === 'BF16') {
    warn({ code: 'NpyWroteV2', message: `${tensor}: BF16 written as '<V2' (the ml_dtypes/JAX/MLX convention); numpy reads it back as void ('V2') unless viewed as ml_dtypes.bfloat16`, tensor });
  }
  if (d) return d;
  if (dtypeBytes(dtype) === 1) {
    warn({ code: 'NpyWroteV1', message: `${tensor}: ${dtype} written as '<V1' (the ml_dtypes convention); numpy reads it back as void ('V1'), and readers must be told it is ${dtype}`, tensor });
    return '<V1';
  }
  throw new TensorportError('NpyUnsupportedDtype', `${tensor}: ${dtype} packs several elements per byte and has no .npy descr`, { tensor });
}
