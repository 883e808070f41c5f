import type { KindIdentifier, KindInfo } from '@tensorport/core';

export const HF_QUANT_KINDS = {
  'fp8-block': {
    what: 'FP8 block-scaled weights (F8_E4M3 with a *_scale_inv per block: DeepSeek-V3/R1, Qwen3-FP8); config.json gives the block size',
    can: 'inspect, validate, convert --dtype (dequantize), convert to GGUF, quantize to MLX',
    extensions: ['.safetensors'],
  },
} as const satisfies Record<string, KindInfo>;

/**
 * hf-quant's part of `identify`, a refiner of safetensors answers: F8_E4M3 tensors with a
 * `<name>_scale_inv` beside them are block-scaled FP8 weights. The names decide; the block size
 * and the rest of the scheme are config.json's, which `inspect` reads.
 */
export const hfQuantIdentifier: KindIdentifier = {
  name: 'hf-quant',
  kinds: HF_QUANT_KINDS,
  refines: ['safetensors'],
  async identify(probe, current) {
    if (current?.kind !== 'safetensors') return null;
    const header = await probe.safetensorsHeader();
    if (header === null) return null;
    const names = new Set(header.tensors.map((t) => t.name));
    const layers = header.tensors.filter((t) => t.dtype === 'F8_E4M3' && names.has(`${t.name}_scale_inv`)).length;
    if (layers === 0) return null;
    probe.details.quantizedLayers = layers;
    return { kind: 'fp8-block', container: 'safetensors' };
  },
};
