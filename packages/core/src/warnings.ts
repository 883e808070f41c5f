/**
 * Every warning code a reader, writer or the pipeline reports in `warnings` (a Finding that did not
 * stop the work), with what it means: the runtime table beside ERROR_CODES, for callers that
 * filter or document warnings. Findings in `errors` carry ERROR_CODES.
 */
export const WARNING_CODES = Object.freeze({
  // detection and the pipeline
  ExtensionMismatch: "the input's extension names another format than its bytes; it was read by its bytes",
  CastSkipped: 'a cast left tensors of other dtypes (integers, BOOL, F8/F6/F4, C64) unchanged',
  SeveralCheckpoints: 'several checkpoint files and no index were given; the first was read',
  SideFilesSkipped: 'side files (config.json) were not written: the output is one file, not a directory',
  // safetensors headers and indexes
  DuplicateMetadataKey: 'a __metadata__ key appears twice; the last value is used, as the reference does',
  LeadingWhitespace: 'the header JSON starts with whitespace, which the reference accepts',
  TensorEntryAsArray: 'a tensor entry is an array, which the reference accepts as a sequence',
  UnknownTensorField: 'a tensor entry has a field the format does not define; ignored',
  IndexMetadataInvalid: "an index's metadata is not an object; ignored",
  IndexTotalSizeInvalid: "an index's metadata.total_size is not a non-negative integer; ignored",
  IndexTotalSizeMismatch: "an index's metadata.total_size differs from the shards' tensor bytes (nothing reads it)",
  ShardMetadataDiffers: "shards have different __metadata__; the first shard's is used",
  // NumPy
  NpyF1AsF8E5M2: "a '<f1' array was read as F8_E5M2 (ml_dtypes' float8_e5m2)",
  NpyV2AsBF16: "a '<V2' array was read as BF16 (how MLX and ml_dtypes store bfloat16)",
  NpyWroteV1: "a one-byte float was written as '<V1': NumPy has no descr for it",
  NpyWroteV2: "BF16 was written as '<V2' (the ml_dtypes/JAX/MLX convention): plain NumPy reads it back as void",
  NpyTrailingBytes: 'bytes after the array data are ignored, as np.load does',
  NpzSkippedMember: 'an .npz member that is not an .npy array was skipped',
  ZipCrcNotChecked: "the ZIP members' CRC-32 was not checked (--no-crc): a corrupted member would convert silently",
  // PyTorch
  TorchBigEndian: 'the checkpoint was saved big-endian; tensors are byte-swapped as they stream',
  TorchDeflatedStorage: 'storages are deflated (torch writes them stored): read by inflating, not memory-mapped',
  TorchTensorSkipped: 'a tensor safetensors cannot hold was skipped (skipUnsupported)',
  TorchTiedCopied: 'tied weights were written as copies because config.json says they are not tied',
  TorchValueDropped: 'a non-tensor value of the state dict (a number, a string) has no place in the output',
  TorchForeignObjects: 'extraction mode kept globals outside the allowlist as inert records (listed with counts and paths)',
  TorchTensorInForeignObject: 'extraction mode left tensors held inside foreign objects unextracted',
  // MLX
  NothingQuantized: 'the MLX command found no layer to (de)quantize; tensors copied unchanged',
  FileNotCopied: 'a file of the input model directory was not copied into the output model',
  // quantized checkpoints as the Hub ships them
  QuantRequantized: 'FP8 block-scaled layers were written as another type (GGUF has none for FP8), with the measured max error',
  QuantDequantized: 'FP8 block-scaled layers were dequantized to the asked dtype, and config.json lost its quantization_config',
  // GGUF
  GgufNonContiguousLayout: 'GGUF tensor data is not laid out back to back',
  GgufTypeFallback: 'tensors whose rows are not whole blocks of the asked ggml type were written as F16',
  GgufRopeFreqsDropped: "a GGUF's rope_freqs.weight (Llama 3.1 RoPE scaling) was not written: config.json needs the original rope_parameters for transformers to compute the same",
  GgufNotLoadable: 'a GGUF model of an architecture tensorport maps (llama, qwen2, qwen3, phi3) lacks what llama.cpp needs to load it: a key, its type, the tokenizer, or a tensor of the right shape (named)',
  MlxBlocksKept: 'MLX-quantized layers carried into GGUF blocks losslessly (counted per ggml type)',
  MlxBlocksRequantized: 'an MLX-quantized layer no lossless ggml type holds was re-quantized (its measured error named)',
  MlxDequantized: 'MLX-quantized layers were dequantized as MLX computes them for a float GGUF output',
} as const);

export type WarningCode = keyof typeof WARNING_CODES;

export function isWarningCode(code: string): code is WarningCode {
  return Object.hasOwn(WARNING_CODES, code);
}
