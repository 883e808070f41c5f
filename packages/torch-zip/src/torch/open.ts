import { BytesSource, startsWithMagic, TensorportError, ZIP_LOCAL_MAGIC, type ByteSource } from '@tensorport/core';
import { PROTO } from '../pickle/opcodes.ts';
import type { TorchCheckpoint } from './assemble.ts';
import { openLegacyCheckpoint } from './legacy-format.ts';
import { isTarHeader } from './tar.ts';
import { openZipCheckpoint, type ZipCheckpointOptions } from './zip-format.ts';

export type OpenTorchOptions = ZipCheckpointOptions;

/**
 * Opens a `torch.save` file without running any of it: ZIP (torch >= 1.6) or the legacy stream
 * (torch < 1.6, or `_use_new_zipfile_serialization=False`). Tensors are described, not read.
 * The pre-0.4 tar format and TorchScript archives are refused.
 */
export async function openTorchCheckpoint(input: ByteSource | Uint8Array, opts: OpenTorchOptions = {}): Promise<TorchCheckpoint> {
  const source = input instanceof Uint8Array ? new BytesSource(input) : input;
  const head = await source.read(0, Math.min(source.size, 512));
  if (startsWithMagic(head, ZIP_LOCAL_MAGIC)) return openZipCheckpoint(source, opts);
  // torch tries its tar loader first on anything that is not a ZIP, whatever follows the header
  if (isTarHeader(head) || (head.byteLength >= 262 && new TextDecoder().decode(head.subarray(257, 262)) === 'ustar')) {
    throw new TensorportError('TorchUnsupportedArchive', `${source.name}: its first 512 bytes are a tar header, so torch.load would read it as a pre-0.4 tar checkpoint (unpickling the tar's members), not as what follows`, { path: source.name });
  }
  if (head[0] === PROTO) return openLegacyCheckpoint(source, opts);
  throw new TensorportError('UnknownFormat', `${source.name} is neither a ZIP nor a legacy torch checkpoint`, { path: source.name });
}
