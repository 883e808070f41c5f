export { identify, type Identification, type IdentifyOptions } from './identify.ts';
export { KINDS, type IdentifiedKind, type KindInfo } from './kinds.ts';
export { looksLikeOnnx, type OnnxHint } from './onnx.ts';
