export { openGguf, type GgufFile, type GgufTensor, type GgufTensorInfo, type GgufReadOptions } from './read.ts';
export { GGML_TYPES, ggmlTypeById, ggmlTypeByName, bitsPerWeight, type GgmlType } from './ggml-types.ts';
export {
  GGUF_VALUE_TYPES, gguf, valueToString, float32String,
  type GgufValue, type GgufArray, type GgufArrayValues, type GgufValueTypeName,
} from './values.ts';
export { GGUF_MAGIC, GGUF_VERSION, GGUF_DEFAULT_ALIGNMENT, ALIGNMENT_KEY } from './constants.ts';
export { dequantizeBlocks, canDequantize, DEQUANTIZABLE_TYPES } from './dequant/index.ts';
export { writeGguf, planGguf, type GgufWriteTensor, type GgufWriteOptions, type GgufMetadataInput, type GgufPlan } from './write.ts';
export { quantizeBlocks, canQuantize, QUANTIZABLE_TYPES } from './quant/quantize.ts';
export { dequantizedDescriptor, quantizeDescriptor, type BlockTensor, type ErrorProbe } from './transform.ts';
export { hfToGgufName, ggufToHfName, isSkippedHfName, permutedHeads } from './llama/names.ts';
export { permuteQK, qkRowOrder } from './llama/permute.ts';
export { llamaMetadata, llamaConfigFromGguf, llamaHeads, type LlamaConfig } from './llama/config.ts';
export { bpePreTokenizer, llamaTokenizerMetadata, TOKEN_TYPE, type TokenizerMetadataOptions } from './llama/tokenizer.ts';
export { ggufArchitecture, GGUF_MODEL_CLASSES, type GgufArchitecture } from './llama/arch.ts';
export { llama3RopeFactors, ropeScalingMetadata } from './llama/rope.ts';
export { llamaToGguf, llamaFromGguf, type LlamaToGgufOptions, type LlamaToGgufResult, type LlamaFromGgufOptions, type LlamaFromGgufResult } from './llama/convert.ts';
export { mlxAffineToGguf, mlxMxfp4ToGguf, mlxLayerToGguf, type MlxAffineWeight, type MlxMxfp4Weight, type MlxToGgufOptions, type MlxToGgufReport } from './mlx.ts';
export { ggufFormat, type GgufOpenOptions, type GgufFormatWriteOptions } from './format.ts';
export { summarizeGguf, type GgufSummary } from './summary.ts';
export { ggufIdentifier, GGUF_KINDS } from './identify.ts';
export { checksLlamaCppArchitecture, llamaCppFindings } from './llama/loadable.ts';
