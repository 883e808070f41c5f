/**
 * tensorport as a library (browser-safe: no `node:` imports here): the Format contract and Context
 * (from @tensorport/core), the registry of every format, and the pipeline.
 */
export {
  TensorportError, ERROR_CODES, WARNING_CODES, FolderContext, MemoryFolder, MemoryTarget, memoryContext, safetensorsFormat, dtypeFromName, isRemoteInput,
  type CastTarget, type Checkpoint, type Context, type DiffOptions, type DType, type ErrorCode, type WarningCode, type Finding, type Folder, type Format, type OutputTarget,
  type TensorChange, type TensorDescriptor, type ValidationReport, type WriteResult,
} from '@tensorport/core';
export { AFFINE_BITS, AFFINE_GROUP_SIZES, MIXED_RECIPES, type AffineVariant, type FloatDType, type MlxLayerInfo } from '@tensorport/mlx';
export { allowedGlobals } from '@tensorport/torch-zip';
export { npzFormat, npyFormat } from '@tensorport/npz';
export { torchFormat } from '@tensorport/torch-zip';
export { createRegistry, defaultRegistry, FORMATS, type AnyFormat, type Detected, type Registry, type RegistryOptions } from './registry.ts';
export { createIdentify, identify, IDENTIFIERS, KINDS, type Identify } from './identify.ts';
export type { Identification, IdentifyOptions, KindIdentifier, KindInfo } from '@tensorport/core';
export { openInput, type Opened, type PipelineOptions, type ReadOptions } from './pipeline/open.ts';
export { castTarget, checkWritten, convert, verifyContent, writerFor, type ConvertOptions, type ConvertReport, type DirectoryLayout, type SideFile, type Transform, type Transformed, type WriteOptionsByFormat } from './pipeline/convert.ts';
export { mlxDequantize, mlxQuantize, mlxRepack, type MlxTransformHooks } from './transforms.ts';
export { dequantizeStep, quantizeStep, repackStep, type DequantizeSettings, type MlxReport, type MlxStep, type QuantizeSettings, type RepackReportEntry, type RepackSettings } from './mlx-steps.ts';
export { carriedFiles, carriesModelFiles, isCarriedFile, MAX_CARRIED_BYTES, type CarriedFile, type CarryingFolder, type CarryRead } from './model-files.ts';
export { writeMlxModelLayout, type MlxModelContent } from './layouts.ts';
export { inspect, type DtypeTotal, type InspectOptions, type InspectReport, type InspectTensor } from './pipeline/inspect.ts';
export { ggufFormat, QUANTIZABLE_TYPES as GGUF_WRITE_TYPES } from '@tensorport/gguf';
export { fromGguf, toGguf, type FromGgufOptions, type ToGgufOptions } from './gguf.ts';
export { ggufView, type GgufInspectSummary, type GgufView } from './pipeline/gguf-inspect.ts';
export { validate, type ValidateReport } from './pipeline/validate.ts';
export { diff, type DiffReport } from './pipeline/diff.ts';
export { scan, type ScanResult } from './pipeline/scan.ts';
export { AbortError, HandleTarget, isAbort, PARTIAL_SUFFIX, type DirectoryHandleLike, type FileHandleLike, type HandleTargetOptions, type WritableLike } from './handles.ts';
