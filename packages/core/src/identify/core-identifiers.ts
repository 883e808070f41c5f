import { HDF5_MAGIC, startsWithMagic } from '../detect.ts';
import { FOREIGN_KINDS, SAFETENSORS_KINDS } from './kinds.ts';
import { looksLikeFlaxMsgpack } from './msgpack.ts';
import { looksLikeOnnx } from './onnx.ts';
import type { IdentifyProbe, KindIdentifier } from './types.ts';
import { foreignZipKind } from './zip-kinds.ts';

/**
 * safetensors files and their shard indexes. An index naming only `.bin` shards is left to the
 * torch identifier (its `torch-index`); MLX quantized safetensors are refined by the MLX one.
 */
export const safetensorsIdentifier: KindIdentifier = {
  name: 'safetensors',
  kinds: SAFETENSORS_KINDS,
  async identify(probe) {
    if (probe.coarse === 'safetensors') {
      await probe.safetensorsHeader();
      return { kind: 'safetensors' };
    }
    if (probe.coarse !== 'json') return null;
    const text = await probe.jsonWindow();
    if (!text.includes('"weight_map"')) return null;
    return /\.safetensors"/.test(text) || !/\.bin"/.test(text) ? { kind: 'safetensors-index' } : null;
  },
};

/** HDF5's superblock may sit at 0, 512, 1024, 2048… (a user block before it); checked up to 1 MiB. */
const HDF5_LAST_OFFSET = 1024 * 1024;

async function hdf5AtUserBlock(probe: IdentifyProbe): Promise<boolean> {
  for (let at = 512; at <= HDF5_LAST_OFFSET && at + 8 <= probe.source.size; at *= 2) {
    const b = await probe.read(at, 8);
    if (startsWithMagic(b, HDF5_MAGIC)) {
      probe.details.superblockOffset = at;
      return true;
    }
  }
  return false;
}

/**
 * What tensorport only names (HDF5, ONNX, Flax msgpack, Keras, MATLAB Live Scripts) and the
 * generic answers (a ZIP or JSON no other identifier claimed). Asked last.
 */
export const foreignIdentifier: KindIdentifier = {
  name: 'foreign',
  kinds: FOREIGN_KINDS,
  async identify(probe) {
    switch (probe.coarse) {
      case 'zip': {
        const names = await probe.zipNames();
        return { kind: names === null ? 'zip' : foreignZipKind(names) };
      }
      case 'hdf5':
        return { kind: 'hdf5' };
      case 'json':
        return { kind: 'json' };
      case 'unknown':
        break;
      default:
        return null;
    }
    const flax = looksLikeFlaxMsgpack(probe.head);
    if (flax) {
      probe.details.entries = flax.entries;
      probe.details.firstKey = flax.firstKey;
      return { kind: 'flax-msgpack' };
    }
    const onnx = looksLikeOnnx(probe.head, probe.source.size);
    if (onnx) {
      probe.details.irVersion = onnx.irVersion;
      if (onnx.producer !== undefined) probe.details.producer = onnx.producer;
      return { kind: 'onnx' };
    }
    return (await hdf5AtUserBlock(probe)) ? { kind: 'hdf5' } : null;
  },
};

/** The identifiers core owns, for a caller that has no format packages (torch-zip's scan by default). */
export const CORE_IDENTIFIERS: readonly KindIdentifier[] = [safetensorsIdentifier, foreignIdentifier];
