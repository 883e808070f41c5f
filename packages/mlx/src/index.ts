// Pure kernels on typed arrays.
export { packCodes, unpackCodes } from './bitstream.ts';
export {
  AFFINE_BITS,
  AFFINE_GROUP_SIZES,
  affineGroup,
  affineScalesBiases,
  checkAffineParams,
  dequantizeAffine,
  quantizeAffine,
  type AffineOptions,
  type AffineQuantized,
  type AffineVariant,
  type DequantizeOptions,
} from './affine.ts';
export { checkFpMode, dequantizeFp, fpDequantizedDtype, FP_MODES, NVFP4_GLOBAL_DIVISOR, type FpDequantizeOptions, type FpMode } from './fp.ts';
export { quantizeFp, type FpQuantized, type FpQuantizeOptions } from './fp-quantize.ts';
export { e4m3ToNumber, e8m0ToNumber, FP4_VALUES, numberToE2m1, numberToE4m3, numberToE8m0 } from './fp-codes.ts';
export { bytesOfWords, decodeFloats, encodeFloats, roundTo, wordsOf, type FloatDType } from './bytes.ts';

// Recognition and config.json.
export { findQuantizedLayers, type QuantizedLayer, type RecognizeOptions, type TensorInfo } from './layers.ts';
export {
  formatConfigJson,
  isQuantMode,
  modeDefaults,
  parseQuantizationConfig,
  parseQuantizationMetadata,
  quantizationSection,
  withQuantization,
  type QuantizationConfig,
  type QuantMode,
  type QuantParams,
} from './config.ts';

// Checkpoint-level conversions: streaming TensorDescriptors for the safetensors writer.
export { dequantizeCheckpoint, type ConversionResult, type DequantizeCheckpointOptions } from './dequantize.ts';
export { checkQuantParams, isQuantizable, quantizeCheckpoint, resolveSpec, specEntry, type LayerChoice, type QuantizeCheckpointOptions, type QuantPredicate, type QuantSpec } from './quantize.ts';
export { MIXED_RECIPES, mixedRecipePredicate, modelPredicate, parseLayerOverride, recipeLayout, withOverrides, type LayerOverride, type MixedRecipe, type RecipeLayout } from './recipes.ts';
export { isLosslessRepack, repackCheckpoint, type RepackLayerReport, type RepackResult, type RepackTarget } from './repack.ts';
export { lockstep, rowsPerBlock } from './rows.ts';

// Model directories as mlx-lm writes them.
export {
  formatMlxIndex,
  MLX_CONFIG_FILE,
  MLX_INDEX_FILE,
  MLX_MAX_SHARD_BYTES,
  planMlxShards,
  totalParameters,
  writeMlxModel,
  type MlxShardPlan,
  type WriteMlxModelOptions,
} from './model.ts';
export { pyFloat, pythonJson } from './pyjson.ts';
export { inspectQuantization, layerInfo, readConfig, MAX_CONFIG_BYTES as MAX_MLX_CONFIG_BYTES, type MlxLayerInfo } from './inspect.ts';
export { mlxIdentifier, quantizedPairs, MLX_KINDS, type NpyDescrReader } from './identify.ts';
