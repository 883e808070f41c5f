/** Every kind of file `identify` names, what it is in words, and what tensorport does with it. */
export type IdentifiedKind =
  | 'safetensors'
  | 'safetensors-index'
  | 'torch-index'
  | 'mlx-quantized'
  | 'npy'
  | 'npz'
  | 'torch-zip'
  | 'torch-legacy'
  | 'torchscript'
  | 'pickle'
  | 'gguf'
  | 'hdf5'
  | 'onnx'
  | 'flax-msgpack'
  | 'keras'
  | 'torch-export'
  | 'matlab-live-script'
  | 'zip'
  | 'json'
  | 'empty'
  | 'unknown';

export interface KindInfo {
  /** What the file is, in words. */
  readonly what: string;
  /** What tensorport can do with it ("convert, inspect, validate", "scan only", "not supported: …"). */
  readonly can: string;
  /** Extensions such files usually carry; another extension gets an ExtensionMismatch warning. */
  readonly extensions: readonly string[];
}

const TORCH_EXT = ['.pt', '.pth', '.bin', '.ckpt'];

export const KINDS: Readonly<Record<IdentifiedKind, KindInfo>> = {
  safetensors: { what: 'safetensors', can: 'convert, inspect, validate', extensions: ['.safetensors'] },
  'safetensors-index': {
    what: 'a sharded safetensors index (JSON with weight_map)',
    can: 'convert, inspect, validate (with its shards)',
    extensions: ['.json'],
  },
  'torch-index': {
    what: 'a sharded PyTorch index (JSON with weight_map naming .bin shards)',
    can: 'convert, inspect, validate (with its shards)',
    extensions: ['.json'],
  },
  'mlx-quantized': {
    what: 'MLX quantized weights (U32 packed .weight with .scales)',
    can: 'inspect, dequantize, repack, convert',
    extensions: ['.safetensors', '.npz'],
  },
  npy: { what: 'a NumPy .npy array', can: 'convert, inspect, validate', extensions: ['.npy'] },
  npz: { what: 'a NumPy .npz archive', can: 'convert, inspect, validate', extensions: ['.npz'] },
  'torch-zip': { what: 'a PyTorch ZIP checkpoint (torch.save, torch >= 1.6)', can: 'convert, inspect, validate, scan', extensions: TORCH_EXT },
  'torch-legacy': { what: 'a legacy PyTorch checkpoint (pickle stream, torch < 1.6)', can: 'convert, inspect, validate, scan', extensions: TORCH_EXT },
  torchscript: {
    what: 'a TorchScript archive (torch.jit.save: code/ and constants.pkl)',
    can: 'scan only; not supported for conversion: it holds code, not just weights',
    extensions: ['.pt', '.pth', '.ptl', '.torchscript', '.zip'],
  },
  pickle: { what: 'a bare Python pickle', can: 'scan only; not supported for conversion: no tensor layout to read', extensions: ['.pkl', '.pickle', '.pt', '.pth', '.bin'] },
  gguf: { what: 'a GGUF file (llama.cpp)', can: 'convert, inspect, validate, diff', extensions: ['.gguf'] },
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
  'torch-export': {
    what: 'a torch.export archive (.pt2: a ZIP with archive_format "pt2", models/ and data/weights/)',
    can: 'not supported: it holds an exported program, not a state dict (torch.export.load it, then save its state_dict)',
    extensions: ['.pt2'],
  },
  'matlab-live-script': {
    what: 'a MATLAB Live Script (a ZIP/OPC package with [Content_Types].xml), not MLX weights: MLX weights ship as .safetensors or .npz',
    can: 'not supported: it is not a model file',
    extensions: ['.mlx'],
  },
  zip: { what: 'a ZIP archive that is no checkpoint format tensorport knows', can: 'not supported: unknown ZIP content', extensions: ['.zip'] },
  json: { what: 'JSON text that is not a shard index (no weight_map)', can: 'not supported: not a checkpoint', extensions: ['.json'] },
  empty: { what: 'an empty file', can: 'not supported: no content', extensions: [] },
  unknown: { what: 'no format tensorport knows', can: 'not supported: unknown content', extensions: [] },
};
