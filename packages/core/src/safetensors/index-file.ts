import { TensorportError, type Finding } from '../errors.ts';
import { parseJson, type JsonObject, type JsonValue } from './json.ts';
import { compareUtf8 } from './order.ts';

/**
 * `model.safetensors.index.json`, as transformers writes it:
 *
 *   {"metadata": {"total_size": <sum of tensor bytes>, ...}, "weight_map": {"<tensor>": "<shard file>", ...}}
 *
 * Shard files are `model-00001-of-00003.safetensors` (5 digits, 1-based) beside the index. Only
 * `weight_map` is needed to read; `total_size` is informational (see openShardedCheckpoint).
 */
export const SHARD_INDEX_FILE = 'model.safetensors.index.json';
/** The file name of an unsharded checkpoint in a model directory. */
export const SINGLE_CHECKPOINT_FILE = 'model.safetensors';
/** Index names a model directory may hold, in the order looked for: transformers', then diffusers'. */
export const SHARD_INDEX_FILES: readonly string[] = [SHARD_INDEX_FILE, 'diffusion_pytorch_model.safetensors.index.json'];
/** Single-file names a model directory may hold: transformers', diffusers' and PEFT's (adapters). */
export const SINGLE_CHECKPOINT_FILES: readonly string[] = [SINGLE_CHECKPOINT_FILE, 'diffusion_pytorch_model.safetensors', 'adapter_model.safetensors'];

export interface ShardIndexLimits {
  /** Index size in bytes; HF's JS index reader uses 250 MB. */
  maxBytes: number;
  /** weight_map entries. The 10^8-byte header cap allows ~1.3M tensors per file. */
  maxEntries: number;
  /** Distinct shard files (HF's JS reader: 10,000; 5-digit names stop at 99,999). */
  maxShards: number;
}

export const DEFAULT_INDEX_LIMITS: Readonly<ShardIndexLimits> = { maxBytes: 250_000_000, maxEntries: 10_000_000, maxShards: 10_000 };

export interface ShardIndex {
  /** tensor name → shard file name, in document order. */
  readonly weightMap: ReadonlyMap<string, string>;
  /** Distinct shard files, sorted (model-00001 first). */
  readonly shardFiles: readonly string[];
  /** `metadata.total_size` when it is a non-negative integer ≤ 2^53, else null. */
  readonly totalSize: number | null;
  /** The whole `metadata` object as plain values (integers beyond 2^53 kept as decimal strings). */
  readonly metadata: Readonly<Record<string, unknown>> | null;
  /** Oddities that do not stop reading (e.g. a malformed total_size). */
  readonly warnings: Finding[];
}

/** Parses an index file's bytes. Untrusted: every limit is checked before the work it bounds. */
export function parseShardIndex(bytes: Uint8Array, limits: Partial<ShardIndexLimits> = {}): ShardIndex {
  const lim = { ...DEFAULT_INDEX_LIMITS, ...limits };
  if (bytes.byteLength > lim.maxBytes) throw invalid(`index is ${bytes.byteLength} bytes, more than the ${lim.maxBytes} allowed`);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw invalid('index is not valid UTF-8');
  }
  const root = parseJson(text, { code: 'InvalidIndex' });
  if (root.kind !== 'object') throw invalid('index must be a JSON object');
  const warnings: Finding[] = [];
  const wm = field(root, 'weight_map');
  if (!wm || wm.kind !== 'object') throw invalid('index has no "weight_map" object');
  if (wm.entries.length > lim.maxEntries) throw invalid(`weight_map has ${wm.entries.length} entries, more than the ${lim.maxEntries} allowed`);
  const weightMap = new Map<string, string>();
  const shards = new Set<string>();
  for (const { key, value } of wm.entries) {
    if (value.kind !== 'string') throw invalid(`weight_map entry ${JSON.stringify(key)} is not a file name`, key);
    const previous = weightMap.get(key);
    if (previous !== undefined && previous !== value.value) {
      throw invalid(`weight_map lists ${JSON.stringify(key)} twice, in ${previous} and ${value.value}`, key);
    }
    if (!shards.has(value.value)) {
      if (!isSafeShardName(value.value)) throw invalid(`shard file name ${JSON.stringify(value.value)} is not a plain file name`, key);
      shards.add(value.value);
      if (shards.size > lim.maxShards) throw invalid(`index names more than ${lim.maxShards} shard files`);
    }
    weightMap.set(key, value.value);
  }
  const meta = field(root, 'metadata');
  let metadata: Record<string, unknown> | null = null;
  let totalSize: number | null = null;
  if (meta && meta.kind === 'object') {
    metadata = plain(meta) as Record<string, unknown>;
    const ts = field(meta, 'total_size');
    if (ts) {
      if (ts.kind === 'number' && ts.value !== null && ts.value <= BigInt(Number.MAX_SAFE_INTEGER)) totalSize = Number(ts.value);
      else warnings.push({ code: 'IndexTotalSizeInvalid', message: `metadata.total_size is not a byte count (${ts.kind === 'number' ? ts.text : ts.kind})` });
    }
  } else if (meta && meta.kind !== 'null') {
    warnings.push({ code: 'IndexMetadataInvalid', message: `index "metadata" is a ${meta.kind}, not an object` });
  }
  return { weightMap, shardFiles: [...shards].sort(compareUtf8), totalSize, metadata, warnings };
}

/**
 * A shard must be a plain file name in the index's directory: no separators (either kind), no
 * `.`/`..`, no NUL, no drive-letter colon, not empty. Anything else could read outside the checkpoint.
 */
export function isSafeShardName(name: string): boolean {
  return name.length > 0 && name.length <= 255 && name !== '.' && name !== '..' && !/[/\\\0:]/.test(name);
}

/** `model-00002-of-00005.safetensors` (transformers' pattern; 1-based). */
export function shardFileName(index: number, count: number): string {
  const pad = (n: number): string => String(n).padStart(5, '0');
  return `model-${pad(index + 1)}-of-${pad(count)}.safetensors`;
}

/**
 * The index text exactly as transformers writes it: `json.dumps(index, indent=2, sort_keys=True)`
 * plus a newline. Python's default `ensure_ascii` escapes everything outside ' '..'~' as \uxxxx
 * (UTF-16 units, lowercase hex) except the short forms \" \\ \b \f \n \r \t. With
 * `totalParameters`, the metadata carries it before `total_size`, as transformers' save_pretrained
 * writes `{"total_parameters": model.num_parameters(), "total_size": ...}` (sorted keys).
 */
export function formatShardIndex(totalSize: number, weightMap: Iterable<readonly [string, string]>, totalParameters?: number): string {
  const entries = [...weightMap].sort((a, b) => compareUtf8(a[0], b[0]));
  const body = entries.length === 0 ? '{}' : '{\n' + entries.map(([k, v]) => `    ${pyString(k)}: ${pyString(v)}`).join(',\n') + '\n  }';
  const params = totalParameters === undefined ? '' : `    "total_parameters": ${totalParameters},\n`;
  return `{\n  "metadata": {\n${params}    "total_size": ${totalSize}\n  },\n  "weight_map": ${body}\n}\n`;
}

const PY_SHORT: Record<number, string> = { 0x22: '\\"', 0x5c: '\\\\', 0x08: '\\b', 0x0c: '\\f', 0x0a: '\\n', 0x0d: '\\r', 0x09: '\\t' };

function pyString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c <= 0x7e && c !== 0x22 && c !== 0x5c) out += s[i];
    else out += PY_SHORT[c] ?? '\\u' + c.toString(16).padStart(4, '0');
  }
  return out + '"';
}

function field(obj: JsonObject, key: string): JsonValue | undefined {
  let found: JsonValue | undefined;
  for (const e of obj.entries) if (e.key === key) found = e.value;
  return found;
}

/** JSON tree → plain values; objects get a null prototype so `__proto__` is just a key. */
function plain(v: JsonValue): unknown {
  switch (v.kind) {
    case 'null':
      return null;
    case 'bool':
    case 'string':
      return v.value;
    case 'number':
      return v.value !== null && v.value > BigInt(Number.MAX_SAFE_INTEGER) ? v.text : Number(v.text);
    case 'array':
      return v.items.map(plain);
    case 'object': {
      const o = Object.create(null) as Record<string, unknown>;
      for (const e of v.entries) o[e.key] = plain(e.value);
      return o;
    }
  }
}

function invalid(message: string, tensor?: string): TensorportError {
  return new TensorportError('InvalidIndex', message, tensor === undefined ? {} : { tensor });
}
