import type { KindIdentifier, KindInfo, ZipArchive } from '@tensorport/core';

export const MLX_KINDS = {
  'mlx-quantized': {
    what: 'MLX quantized weights (U32 packed .weight with .scales)',
    can: 'inspect, dequantize, repack, convert',
    extensions: ['.safetensors', '.npz'],
  },
} as const satisfies Record<string, KindInfo>;

/** `X.weight` names that have an `X.scales` beside them (MLX's quantized layers). */
export function quantizedPairs(names: Iterable<string>, suffix = ''): string[] {
  const set = new Set(names);
  const out: string[] = [];
  for (const n of set) {
    if (!n.endsWith(`.weight${suffix}`)) continue;
    const base = n.slice(0, -`.weight${suffix}`.length);
    if (set.has(`${base}.scales${suffix}`)) out.push(n);
  }
  return out;
}

/** Reads an .npz member's dtype descr (`<u4`), or null: npz's header parser, handed in by the library. */
export type NpyDescrReader = (zip: ZipArchive, member: string) => Promise<string | null>;

/**
 * MLX's part of `identify`, a refiner of safetensors and npz answers: U32 `.weight` tensors with
 * `.scales` beside them (or `format: mlx` metadata) are MLX quantized weights. In an npz the
 * names decide unless the first packed weight's descr is readable and not uint32 (an fp model
 * that happens to have `.scales` is not MLX).
 */
export function mlxIdentifier(npyDescr: NpyDescrReader): KindIdentifier {
  return {
    name: 'mlx',
    kinds: MLX_KINDS,
    refines: ['safetensors', 'npz'],
    async identify(probe, current) {
      if (current?.kind === 'safetensors') {
        const header = await probe.safetensorsHeader();
        if (header === null) return null;
        const u32 = new Set(header.tensors.filter((t) => t.dtype === 'U32').map((t) => t.name));
        const pairs = quantizedPairs(header.tensors.map((t) => t.name)).filter((w) => u32.has(w));
        if (header.metadata?.get('format') !== 'mlx' && pairs.length === 0) return null;
        probe.details.quantizedLayers = pairs.length;
        return { kind: 'mlx-quantized', container: 'safetensors' };
      }
      const zip = await probe.zip();
      if (zip === null) return null;
      const pairs = quantizedPairs(zip.entries.map((e) => e.name), '.npy');
      if (pairs.length === 0) return null;
      const descr = await npyDescr(zip, pairs[0]!);
      if (descr !== null && !/^[<|=]?u4$/.test(descr)) return null;
      probe.details.quantizedLayers = pairs.length;
      return { kind: 'mlx-quantized', container: 'npz' };
    },
  };
}
