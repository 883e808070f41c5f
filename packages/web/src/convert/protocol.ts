/**
 * What the page asks the worker to convert, and the CLI command that writes the same bytes
 * (the page shows it, the tests run it). Plain structured-clonable data.
 */

/** Output kinds of the panel: one safetensors file, a sharded directory, an .npz, a torch .pt, a GGUF. */
export type OutputKind = 'safetensors' | 'safetensors-sharded' | 'npz' | 'torch' | 'gguf';

/** The ggml types the panel offers for a GGUF (the CLI's --gguf-type; none: the input's float type). */
export const GGUF_TYPES = ['F32', 'F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_1'] as const;

/** An MLX step before the write: the library's dequantizeStep or quantizeStep (config.json from the drop). */
export type MlxChoice = { op: 'dequantize' } | { op: 'quantize'; mode: 'affine' | 'mxfp4' | 'mxfp8' | 'nvfp4'; bits?: number; groupSize?: number };

export interface ConvertChoice {
  to: OutputKind;
  dtype?: 'f16' | 'bf16' | 'f32';
  mlx?: MlxChoice;
  /** Largest shard in tensor bytes (sharded output only). */
  maxShardSize?: number;
  /** GGUF output: the ggml type of the matrices. */
  ggufType?: (typeof GGUF_TYPES)[number];
}

/** Where the output goes: a handle the person picked, or the origin-private file system (then offered as downloads). */
export type Destination =
  | { where: 'handle'; handle: FileSystemFileHandle | FileSystemDirectoryHandle }
  | { where: 'opfs'; name: string; directory: boolean };

export interface ConvertRequest {
  kind: 'convert';
  id: number;
  files: File[];
  choice: ConvertChoice;
  destination: Destination;
}

export interface CancelRequest {
  kind: 'cancel';
  id: number;
}

export interface Converted {
  from: string;
  to: string;
  /** Written files: names inside the chosen directory, or the one file's name. */
  files: Array<{ name: string; size: number }>;
  tensors: number;
  bytes: number;
  cast: number;
  /** With an MLX step: the quantized layers of the output (quantize) or of the input (dequantize). */
  quantized: number | null;
  warnings: Array<{ code: string; message: string }>;
  /** `tensorport validate` of what was written, re-read from the destination. */
  validation: { format: string | null; valid: boolean; errors: Array<{ code: string; message: string }>; files: string[] };
  /** The OPFS directory holding the output when there was no picker (the page offers downloads from it). */
  opfsDir: string | null;
  ms: number;
}

export type ConvertResponse =
  | { type: 'progress'; id: number; done: number; total: number }
  | { type: 'converted'; id: number; result: Converted }
  | { type: 'convert-failed'; id: number; code: string; message: string }
  | { type: 'cancelled'; id: number };

/** The OPFS directory the fallback writes into; emptied before each conversion. */
export const OPFS_DIR = 'tensorport-output';

const EXTENSIONS: Record<Exclude<OutputKind, 'safetensors-sharded'>, string> = { safetensors: '.safetensors', npz: '.npz', torch: '.pt', gguf: '.gguf' };

/** The output file's suggested name: the input's stem with the output's extension. */
export function suggestedName(input: string, to: OutputKind): string {
  if (to === 'safetensors-sharded') return `${stem(input)}-sharded`;
  return stem(input) + EXTENSIONS[to];
}

function stem(name: string): string {
  const s = name.replace(/\.safetensors\.index\.json$|\.bin\.index\.json$|\.(safetensors|npz|npy|pt|pth|bin|ckpt|pkl|pickle)$/i, '');
  return s === '' ? 'model' : s;
}

/** The command line for the same input and options (output named `out`); with an MLX step, the CLI's own command for it. */
export function cliCommand(input: string, out: string, c: ConvertChoice): string {
  const parts = ['tensorport', c.mlx?.op ?? 'convert', input, c.to === 'safetensors-sharded' ? `${out}/` : out];
  if (c.mlx?.op === 'quantize') {
    if (c.mlx.mode !== 'affine') parts.push('--mode', c.mlx.mode);
    if (c.mlx.bits !== undefined) parts.push('--bits', String(c.mlx.bits));
    if (c.mlx.groupSize !== undefined) parts.push('--group-size', String(c.mlx.groupSize));
  }
  // quantize has no cast (the page offers none with it); dequantize's --dtype is its output dtype
  if (c.dtype) parts.push('--dtype', c.dtype);
  if (c.to === 'safetensors-sharded' && c.maxShardSize !== undefined) parts.push('--max-shard-size', String(c.maxShardSize));
  if (c.to === 'gguf' && c.ggufType) parts.push('--gguf-type', c.ggufType);
  return parts.map((p) => (/^[\w./@:-]+$/.test(p) ? p : `'${p.replace(/'/g, `'\\''`)}'`)).join(' ');
}
