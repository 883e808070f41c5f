import type { KindInfo } from './types.ts';

/** The kinds core names itself: safetensors (core's format) and its shard index. */
export const SAFETENSORS_KINDS = {
  safetensors: { what: 'safetensors', can: 'convert, inspect, validate', extensions: ['.safetensors'] },
  'safetensors-index': {
    what: 'a sharded safetensors index (JSON with weight_map)',
    can: 'convert, inspect, validate (with its shards)',
    extensions: ['.json'],
  },
} as const satisfies Record<string, KindInfo>;

/**
 * Formats tensorport only names (no package reads them), and the generic containers: named here,
 * in core, because recognising them needs nothing but bytes and ZIP member names.
 */
export const FOREIGN_KINDS = {
  hdf5: { what: 'an HDF5 file (Keras/TF .h5)', can: 'not supported: HDF5 is identified only', extensions: ['.h5', '.hdf5', '.weights.h5'] },
  onnx: { what: 'an ONNX model (protobuf ModelProto)', can: 'not supported: ONNX is identified only', extensions: ['.onnx'] },
  'flax-msgpack': {
    what: 'Flax weights (flax.serialization msgpack: a map of parameter trees, arrays as msgpack extensions)',
    can: 'not supported: Flax msgpack is identified only',
    extensions: ['.msgpack'],
  },
  keras: {
    what: 'a Keras 3 model archive (.keras: a ZIP with metadata.json, config.json and model.weights.h5)',
    can: 'not supported: Keras archives are identified only',
    extensions: ['.keras'],
  },
  'matlab-live-script': {
    what: 'a MATLAB Live Script (a ZIP/OPC package with [Content_Types].xml), not MLX weights: MLX weights ship as .safetensors or .npz',
    can: 'not supported: it is not a model file',
    extensions: ['.mlx'],
  },
  zip: { what: 'a ZIP archive that is no checkpoint format tensorport knows', can: 'not supported: unknown ZIP content', extensions: ['.zip'] },
  json: { what: 'JSON text that is not a shard index (no weight_map)', can: 'not supported: not a checkpoint', extensions: ['.json'] },
} as const satisfies Record<string, KindInfo>;
