/**
 * One error type for everything tensorport refuses. `code` is stable and names exactly what went
 * wrong (in the spirit of the reference crate's `SafeTensorError` variants); `offset` is a byte
 * offset in the input when one applies, `tensor` the tensor name when one applies.
 * This list is every code, at runtime (for callers that switch on codes or document them);
 * ErrorCode is derived from it.
 */
export const ERROR_CODES = Object.freeze([
  // safetensors header, in the order the reference checks them
  'HeaderTooSmall',
  'HeaderTooLarge',
  'InvalidHeaderLength',
  'InvalidHeaderUtf8',
  'InvalidHeaderJson',
  'InvalidHeaderStructure',
  'UnknownDtype',
  'InvalidOffset',
  'ValidationOverflow',
  'MisalignedSlice',
  'TensorInvalidInfo',
  'MetadataIncompleteBuffer',
  // deliberately stricter than the reference
  'DuplicateTensorName',
  // lookups and API misuse
  'TensorNotFound',
  'RangeOutOfBounds',
  'DimensionTooLarge',
  // writing
  'ReservedTensorName',
  'TensorByteLengthMismatch',
  'InvalidMetadata',
  'OutputExists',
  'SameInputOutput',
  // sharded checkpoints
  'InvalidIndex',
  'ShardMissing',
  'ShardMismatch',
  // conversions
  'UnsupportedCast',
  'UnknownFormat',
  'UnsupportedFormat',
  'InvalidOption',
  'VerifyMismatch',
  // pickles and PyTorch checkpoints
  'PickleInvalid',
  'PickleUnsupportedOpcode',
  'PickleDisallowedGlobal',
  'PickleLimitExceeded',
  'TorchInvalidCheckpoint',
  'TorchStorageMismatch',
  'TorchUnsupportedArchive',
  'TorchUnsupportedTensor',
  'TorchUnsupportedDtype',
  // ZIP containers (.npz, PyTorch .pt)
  'ZipEndRecordNotFound',
  'ZipAmbiguousEndRecord',
  'ZipTruncated',
  'ZipInvalidCentralDirectory',
  'ZipInvalidZip64',
  'ZipMultiDisk',
  'ZipLimitExceeded',
  'ZipInvalidName',
  'ZipDuplicateName',
  'ZipEncrypted',
  'ZipUnsupportedMethod',
  'ZipLocalHeaderMismatch',
  'ZipDataDescriptorMismatch',
  'ZipMemberOutOfBounds',
  'ZipOverlap',
  'ZipSizeMismatch',
  'ZipBomb',
  'ZipCrcMismatch',
  'ZipInflateFailed',
  // .npy headers
  'NpyInvalidMagic',
  'NpyUnsupportedVersion',
  'NpyHeaderTooLarge',
  'NpyInvalidHeader',
  'NpyUnsupportedDtype',
  'NpyTruncated',
  'NpyFortranTooLarge',
  // MLX quantized layers
  'MlxAmbiguousQuantization',
  'MlxInvalidQuantization',
  'MlxUnsupportedQuantization',
  'MlxInvalidConfig',
  'MlxNonFiniteWeight',
  // GGUF (packages/gguf)
  'GgufInvalidMagic',
  'GgufUnsupportedVersion',
  'GgufBigEndian',
  'GgufTruncated',
  'GgufLimitExceeded',
  'GgufInvalidUtf8',
  'GgufInvalidValueType',
  'GgufInvalidKey',
  'GgufDuplicateKey',
  'GgufInvalidAlignment',
  'GgufInvalidTensorInfo',
  'GgufUnknownType',
  'GgufBlockMismatch',
  'GgufTensorOutOfBounds',
  'GgufTensorOverlap',
  'GgufMisalignedOffset',
  'GgufUnsupportedType',
  'GgufInvalidValue',
  'GgufInvalidModel',
  // quantized checkpoints as the Hub ships them (packages/hf-quant)
  'QuantInvalidConfig',
  'QuantMissingScale',
  'QuantScaleMismatch',
  'QuantUnsupported',
  // remote sources (HTTP Range, Hub addressing: packages/core/src/remote)
  'RemoteInvalidAddress',
  'RemoteUnauthorized',
  'RemoteForbidden',
  'RemoteNotFound',
  'RemoteFileChanged',
  'RemoteRangeUnsupported',
  'RemoteProtocolError',
  'RemoteUnavailable',
  'RemoteTimeout',
  'RemoteHttpError',
  // byte sources
  'ReadOutOfBounds',
  'ShortRead',
  'IoError',
  // not tensorport's: an unexpected exception, reported by the CLI's --json failure object (a bug to report)
  'InternalError',
] as const);

export type ErrorCode = (typeof ERROR_CODES)[number];

export interface TensorportErrorDetails {
  offset?: number | bigint;
  tensor?: string;
  /** A second tensor name, e.g. the first occurrence of a duplicate. */
  other?: string;
  path?: string;
  cause?: unknown;
}

export class TensorportError extends Error {
  readonly code: ErrorCode;
  readonly offset?: number | bigint;
  readonly tensor?: string;
  readonly other?: string;
  readonly path?: string;

  constructor(code: ErrorCode, message: string, details: TensorportErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'TensorportError';
    this.code = code;
    if (details.offset !== undefined) this.offset = details.offset;
    if (details.tensor !== undefined) this.tensor = details.tensor;
    if (details.other !== undefined) this.other = details.other;
    if (details.path !== undefined) this.path = details.path;
  }

  /** A JSON-safe view for `--json` outputs (bigint offsets become decimal strings). */
  toJSON(): Record<string, unknown> {
    const out: Record<string, unknown> = { code: this.code, message: this.message };
    if (this.offset !== undefined) out.offset = typeof this.offset === 'bigint' ? this.offset.toString() : this.offset;
    if (this.tensor !== undefined) out.tensor = this.tensor;
    if (this.other !== undefined) out.other = this.other;
    if (this.path !== undefined) out.path = this.path;
    return out;
  }
}

export function isTensorportError(e: unknown): e is TensorportError {
  return e instanceof TensorportError;
}

/** A non-fatal observation (or a collected error) reported by validators and readers. */
export interface Finding {
  code: string;
  message: string;
  tensor?: string;
  offset?: number | string;
  path?: string;
}

export function toFinding(e: TensorportError): Finding {
  return e.toJSON() as unknown as Finding;
}
