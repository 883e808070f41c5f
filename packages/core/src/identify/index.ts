export { BASE_KINDS, identifyWith, kindsOf } from './identify.ts';
export { CORE_IDENTIFIERS, foreignIdentifier, safetensorsIdentifier } from './core-identifiers.ts';
export { FOREIGN_KINDS, SAFETENSORS_KINDS } from './kinds.ts';
export { looksLikeOnnx, type OnnxHint } from './onnx.ts';
export type { Identification, Identified, IdentifyOptions, IdentifyProbe, KindIdentifier, KindInfo } from './types.ts';
