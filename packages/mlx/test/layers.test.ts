import { describe, expect, it } from 'vitest';
import type { DType } from '@tensorport/core';
import { findQuantizedLayers, parseQuantizationConfig, type TensorInfo } from '../src/index.ts';

const t = (name: string, dtype: DType, shape: number[]): TensorInfo => ({ name, dtype, shape });

/** An affine layer packed with `product` = bits × group size = 256 (4/64, 8/32 or 2/128). */
function affine(path: string, wCols = 64, sCols = 8, dtype: DType = 'BF16', rows = 16): TensorInfo[] {
  return [t(`${path}.weight`, 'U32', [rows, wCols]), t(`${path}.scales`, dtype, [rows, sCols]), t(`${path}.biases`, dtype, [rows, sCols])];
}

const code = (c: string) => expect.objectContaining({ code: c });

describe('findQuantizedLayers', () => {
  it('refuses to guess when shapes are ambiguous and nothing says which', () => {
    expect(() => findQuantizedLayers({ tensors: affine('m.q_proj') })).toThrow(code('MlxAmbiguousQuantization'));
  });

  it('takes bits and group size from config.json, then per-module overrides win over its defaults', () => {
    const tensors = [...affine('m.q_proj'), ...affine('m.gate', 128, 8)];
    const config = { quantization: { group_size: 64, bits: 4, 'm.gate': { group_size: 64, bits: 8 } } };
    const layers = findQuantizedLayers({ tensors }, { config });
    expect(layers.map((l) => [l.path, l.mode, l.bits, l.groupSize, l.source, l.shape])).toEqual([
      ['m.q_proj', 'affine', 4, 64, 'config', [16, 512]],
      ['m.gate', 'affine', 8, 64, 'config', [16, 512]],
    ]);
  });

  it('reads quantization_config when quantization is absent; ignores producers\' extra keys', () => {
    const config = { quantization_config: { group_size: 32, bits: 8, quant_method: undefined, linear_class: 'x', quantization_mode: 'y' } };
    expect(findQuantizedLayers({ tensors: affine('a') }, { config })[0]).toMatchObject({ bits: 8, groupSize: 32 });
  });

  it('ignores a non-MLX quantization_config (AWQ, GPTQ, FP8)', () => {
    const config = { quantization_config: { quant_method: 'awq', bits: 4, group_size: 128 } };
    expect(() => findQuantizedLayers({ tensors: affine('a') }, { config })).toThrow(code('MlxAmbiguousQuantization'));
    expect(parseQuantizationConfig(config)).toBeNull();
  });

  it('explicit options win over config, config over __metadata__', () => {
    const tensors = affine('a');
    const metadata = new Map([['quantization_bits', '2'], ['quantization_group_size', '128']]);
    expect(findQuantizedLayers({ tensors, metadata })[0]).toMatchObject({ bits: 2, groupSize: 128, source: 'metadata' });
    const config = { quantization: { group_size: 32, bits: 8 } };
    expect(findQuantizedLayers({ tensors, metadata }, { config })[0]).toMatchObject({ bits: 8, groupSize: 32, source: 'config' });
    expect(findQuantizedLayers({ tensors, metadata }, { config, bits: 4 })[0]).toMatchObject({ bits: 4, groupSize: 64, source: 'options' });
  });

  it('one known field fixes the other from the shapes; a unique fit is inferred', () => {
    expect(findQuantizedLayers({ tensors: affine('a') }, { groupSize: 128 })[0]).toMatchObject({ bits: 2 });
    // 3 bits × 32 is the only product 96 among MLX's choices.
    expect(findQuantizedLayers({ tensors: affine('a', 24, 8) })[0]).toMatchObject({ bits: 3, groupSize: 32, source: 'shape', shape: [16, 256] });
  });

  it('`false` entries mark modules unquantized; a quantized tensor set there is a contradiction', () => {
    const tensors = [...affine('a'), t('norm.weight', 'F16', [64])];
    const ok = { quantization: { group_size: 64, bits: 4, norm: false } };
    expect(findQuantizedLayers({ tensors }, { config: ok }).map((l) => l.path)).toEqual(['a']);
    const bad = { quantization: { group_size: 64, bits: 4, a: false } };
    expect(() => findQuantizedLayers({ tensors }, { config: bad })).toThrow(code('MlxInvalidQuantization'));
  });

  it('a config entry for a module without scales is refused', () => {
    const tensors = [t('a.weight', 'F16', [4, 64])];
    expect(() => findQuantizedLayers({ tensors }, { config: { quantization: { bits: 4, group_size: 64, a: { bits: 8 } } } })).toThrow(code('MlxInvalidQuantization'));
  });

  it('never takes a layer\'s own float `bias` for `biases`', () => {
    const tensors = [t('a.weight', 'U32', [4, 8]), t('a.scales', 'F16', [4, 1]), t('a.bias', 'F16', [4])];
    expect(() => findQuantizedLayers({ tensors }, { config: { quantization: { bits: 4, group_size: 64 } } })).toThrow(code('MlxInvalidQuantization'));
    const both = [...tensors, t('a.biases', 'F16', [4, 1])];
    const layers = findQuantizedLayers({ tensors: both }, { config: { quantization: { bits: 4, group_size: 64 } } });
    expect(layers[0]).toMatchObject({ biases: 'a.biases', scales: 'a.scales' });
  });

  it('a float weight next to a `scales` parameter is not a quantized layer', () => {
    const tensors = [t('ls.weight', 'F32', [4, 64]), t('ls.scales', 'F32', [64])];
    expect(findQuantizedLayers({ tensors })).toEqual([]);
  });

  it('infers mxfp4, mxfp8, nvfp4 from U8 scales without biases; a config mode is honoured', () => {
    const fp = (cols: number, sCols: number) => [t('e.weight', 'U32', [3, 8, cols]), t('e.scales', 'U8', [3, 8, sCols])];
    expect(findQuantizedLayers({ tensors: fp(16, 4) })[0]).toMatchObject({ mode: 'mxfp4', bits: 4, groupSize: 32, shape: [3, 8, 128] });
    expect(findQuantizedLayers({ tensors: fp(32, 4) })[0]).toMatchObject({ mode: 'mxfp8', bits: 8, groupSize: 32 });
    expect(findQuantizedLayers({ tensors: fp(16, 8) })[0]).toMatchObject({ mode: 'nvfp4', bits: 4, groupSize: 16 });
    const config = { quantization: { group_size: 32, bits: 4, mode: 'mxfp4' } };
    expect(findQuantizedLayers({ tensors: fp(16, 4) }, { config })[0]).toMatchObject({ mode: 'mxfp4' });
    expect(() => findQuantizedLayers({ tensors: fp(16, 8) }, { config })).toThrow(code('MlxInvalidQuantization'));
    // A config without `mode` means affine, which needs biases.
    expect(() => findQuantizedLayers({ tensors: fp(16, 4) }, { config: { quantization: { group_size: 32, bits: 4 } } })).toThrow(code('MlxInvalidQuantization'));
  });

  it('hostile shapes and dtypes get typed errors', () => {
    const cfg = { config: { quantization: { group_size: 64, bits: 4 } } };
    const cases: TensorInfo[][] = [
      [t('a.weight', 'U32', [64]), t('a.scales', 'F16', [8]), t('a.biases', 'F16', [8])], // 1-D
      [t('a.weight', 'U32', [4, 64]), t('a.scales', 'F16', [5, 8]), t('a.biases', 'F16', [5, 8])], // rows differ
      [t('a.weight', 'U32', [4, 64]), t('a.scales', 'F16', [4, 8]), t('a.biases', 'BF16', [4, 8])], // dtypes differ
      [t('a.weight', 'U32', [4, 64]), t('a.scales', 'F16', [4, 8]), t('a.biases', 'F16', [4, 7])], // shapes differ
      [t('a.weight', 'U32', [4, 64]), t('a.scales', 'F16', [4, 9]), t('a.biases', 'F16', [4, 9])], // wrong group count
      [t('a.weight', 'U32', [4, 64]), t('a.scales', 'I32', [4, 8]), t('a.biases', 'I32', [4, 8])], // integer scales
      [t('a.weight', 'U32', [4, 0]), t('a.scales', 'F16', [4, 0]), t('a.biases', 'F16', [4, 0])], // empty
    ];
    for (const tensors of cases) expect(() => findQuantizedLayers({ tensors }, cfg)).toThrow(code('MlxInvalidQuantization'));
    expect(() => findQuantizedLayers({ tensors: affine('a') }, { bits: 7 })).toThrow(code('MlxUnsupportedQuantization'));
    expect(() => findQuantizedLayers({ tensors: affine('a') }, { groupSize: 16 })).toThrow(code('MlxUnsupportedQuantization'));
  });

  it('malformed config sections and metadata are refused', () => {
    const tensors = affine('a');
    for (const config of [[], 'x', { quantization: 3 }, { quantization: { bits: '4' } }, { quantization: { bits: 4, group_size: -64 } }, { quantization: { bits: 4, mode: 'int4' } }, { quantization: { bits: 4, a: 5 } }]) {
      expect(() => findQuantizedLayers({ tensors }, { config })).toThrow(code('MlxInvalidConfig'));
    }
    for (const v of ['4.0', '-4', '', '1e3', ' 4']) {
      expect(() => findQuantizedLayers({ tensors, metadata: new Map([['quantization_bits', v]]) })).toThrow(code('MlxInvalidConfig'));
    }
  });

  it('1-bit layers (seen in the wild, not upstream MLX) are readable when a config says so', () => {
    const tensors = affine('a', 4, 1);
    expect(findQuantizedLayers({ tensors }, { config: { quantization: { group_size: 128, bits: 1 } } })[0]).toMatchObject({ bits: 1, groupSize: 128, shape: [16, 128] });
  });
});
