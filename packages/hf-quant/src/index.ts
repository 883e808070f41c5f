export { E4M3FN_VALUES } from './e4m3.ts';
export { fp8Layers, hfQuantScheme, isFp8Block, type Fp8BlockScheme, type Fp8Layer, type HfQuantScheme, type OtherScheme } from './scheme.ts';
export { dequantizeFp8Block, dequantizeFp8Tensors } from './fp8-dequant.ts';
export { HF_QUANT_KINDS, hfQuantIdentifier } from './identify.ts';
