import { foreignIdentifier, identifyWith, kindsOf, safetensorsIdentifier, type ByteSource, type Identification, type IdentifyOptions, type KindIdentifier, type KindInfo } from '@tensorport/core';
import { ggufIdentifier } from '@tensorport/gguf';
import { hfQuantIdentifier } from '@tensorport/hf-quant';
import { mlxIdentifier } from '@tensorport/mlx';
import { npyMemberDescr, npzIdentifier } from '@tensorport/npz';
import { torchIdentifier } from '@tensorport/torch-zip';

/** Names a file's kind from its bytes: `identify` assembled from some identifiers. */
export type Identify = (source: ByteSource, options?: IdentifyOptions) => Promise<Identification>;

/**
 * Every format package's part of `identify`, in the order they are asked (refiners after the
 * first answer, whatever their place). The order also decides what an extension "usually" is in
 * an ExtensionMismatch warning (`.json`: a safetensors index; `.npz`: MLX quantized weights;
 * `.zip`: TorchScript), so core's generic answers (a ZIP, JSON, HDF5…) come last.
 */
export const IDENTIFIERS: readonly KindIdentifier[] = [
  safetensorsIdentifier,
  torchIdentifier,
  mlxIdentifier(npyMemberDescr),
  hfQuantIdentifier,
  npzIdentifier,
  ggufIdentifier,
  foreignIdentifier,
];

export function createIdentify(identifiers: readonly KindIdentifier[]): Identify {
  const list = [...identifiers];
  return (source, options) => identifyWith(list, source, options);
}

/** Names any file tensorport knows from its bytes (reading a few KB): what the `identify` command prints. */
export const identify: Identify = createIdentify(IDENTIFIERS);

/** Every kind `identify` can answer, in words. */
export const KINDS: Readonly<Record<string, KindInfo>> = kindsOf(IDENTIFIERS);
