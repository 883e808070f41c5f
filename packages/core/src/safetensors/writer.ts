import { byteLength as expectedByteLength, isDType, type DType } from '../dtype.ts';
import { TensorportError } from '../errors.ts';
import { writeChunk, type ByteSink } from '../io/sink.ts';
import type { TensorDescriptor } from '../tensor.ts';
import { tensorsInOrder } from '../tensor-chunks.ts';
import { writeOrder } from './order.ts';
import { verbatimSource } from './verbatim.ts';

/** What the header needs to know about a tensor: no data. */
export interface TensorLayout {
  readonly name: string;
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly byteLength: number;
}

/** `null` writes no `__metadata__` key; an empty map writes `"__metadata__":{}`. */
export type MetadataInput = ReadonlyMap<string, string> | Readonly<Record<string, string>> | null | undefined;

export interface SafetensorsPlan {
  /** The first 8 + N bytes of the file: u64 LE N, compact JSON, spaces up to a multiple of 8. */
  readonly header: Uint8Array;
  /** Indices into the input array, in the order the data is written. */
  readonly order: number[];
  /** Where each input tensor begins in the data buffer, indexed like the input (not by `order`); it ends `byteLength` later. */
  readonly begins: Float64Array;
  /** `[begin, end)` for each input tensor, indexed like the input: made when first read (100,000 pairs otherwise). */
  readonly offsets: ReadonlyArray<readonly [number, number]>;
  /** Bytes after the header. */
  readonly dataLength: number;
}

export interface WriteOptions {
  /** Called after every chunk with bytes written so far (header included) and the file's total size. */
  onProgress?(bytesDone: number, total: number): void;
  /** Requested chunk size when streaming tensors (the source decides the actual sizes). */
  chunkSize?: number;
}

/**
 * The metadata a safetensors output gets: the input's, with `extra` entries added or replaced, and
 * `defaults` for keys it still lacks. `{"format": "pt"}` as a default is the pipeline's choice
 * (transformers refuses, or fails on, a file without it); the writer itself adds nothing, so its
 * bytes stay those of the reference's `save_file` for the same arguments. Null (no `__metadata__`)
 * only when all three are empty.
 */
export function outputMetadata(input: MetadataInput, extra?: Readonly<Record<string, string>>, defaults?: Readonly<Record<string, string>>): ReadonlyMap<string, string> | null {
  const base = metadataEntries(input);
  const hasExtra = extra !== undefined && Object.keys(extra).length > 0;
  const hasDefaults = defaults !== undefined && Object.keys(defaults).length > 0;
  if (!hasExtra && !hasDefaults) return base === null ? null : new Map(base);
  const out = new Map(base ?? []);
  for (const [k, v] of Object.entries(extra ?? {})) out.set(k, v);
  for (const [k, v] of Object.entries(defaults ?? {})) if (!out.has(k)) out.set(k, v);
  return out;
}

/** The reference's `MAX_HEADER_SIZE` (10^8 bytes, not 100 MiB), checked after padding. */
const MAX_HEADER_BYTES = 100_000_000;

/**
 * Computes the complete header before any data is written, rejecting what the reference would
 * write but could not read back (a tensor named `__metadata__`, issue safetensors#849) and what it
 * rejects on write (header > 10^8 bytes).
 */
export function planSafetensors(tensors: readonly TensorLayout[], metadata: MetadataInput): SafetensorsPlan {
  const meta = metadataEntries(metadata);
  checkTensorLayouts(tensors);
  const order = writeOrder(tensors);
  const begins = new Float64Array(tensors.length);
  let end = 0;
  for (const i of order) {
    begins[i] = end;
    end += tensors[i]!.byteLength;
    if (!Number.isSafeInteger(end)) {
      throw new TensorportError('ValidationOverflow', 'total tensor size exceeds 2^53 bytes', { tensor: tensors[i]!.name });
    }
  }
  let offsets: Array<readonly [number, number]> | undefined;
  return {
    header: headerBytes(tensors, order, begins, meta),
    order,
    begins,
    get offsets() {
      return (offsets ??= Array.from(begins, (b, i) => [b, b + tensors[i]!.byteLength] as const));
    },
    dataLength: end,
  };
}

/**
 * Writes a complete safetensors file to `sink` and commits it; on any error the sink is aborted
 * (a file sink leaves nothing behind) and the error rethrown.
 */
export async function writeSafetensors(
  tensors: readonly TensorDescriptor[],
  metadata: MetadataInput,
  sink: ByteSink,
  opts: WriteOptions = {},
): Promise<{ bytes: number }> {
  try {
    const result = await streamSafetensors(tensors, metadata, sink, opts);
    await sink.commit();
    return result;
  } catch (e) {
    await abortQuietly(sink);
    throw e;
  }
}

/**
 * Streams header and data into `sink` without committing or aborting it, for callers that commit
 * several files together (sharded checkpoints). Each tensor must stream exactly `byteLength` bytes.
 */
export async function streamSafetensors(
  tensors: readonly TensorDescriptor[],
  metadata: MetadataInput,
  sink: ByteSink,
  opts: WriteOptions = {},
): Promise<{ bytes: number }> {
  const plan = planSafetensors(tensors, metadata);
  const total = plan.header.byteLength + plan.dataLength;
  const whole = sink.copyWhole && sink.bytesWritten === 0 ? await verbatimSource(plan, tensors) : null;
  if (whole && (await sink.copyWhole!(whole))) {
    opts.onProgress?.(total, total);
    return { bytes: total };
  }
  let done = plan.header.byteLength;
  await sink.write(plan.header);
  opts.onProgress?.(done, total);
  for await (const [, chunks] of tensorsInOrder(plan.order.map((i) => tensors[i]!), opts.chunkSize)) {
    for await (const chunk of chunks) {
      if (chunk.byteLength === 0) continue;
      await writeChunk(sink, chunk);
      done += chunk.byteLength;
      opts.onProgress?.(done, total);
    }
  }
  return { bytes: total };
}

export async function abortQuietly(sink: ByteSink): Promise<void> {
  try {
    await sink.abort();
  } catch {
    // The original error is the one worth reporting.
  }
}

function metadataEntries(metadata: MetadataInput): Array<[string, string]> | null {
  if (metadata === null || metadata === undefined) return null;
  if (typeof metadata !== 'object') throw new TensorportError('InvalidMetadata', `metadata must be a map of strings, got ${describe(metadata)}`);
  const entries: Array<[unknown, unknown]> = metadata instanceof Map ? [...metadata.entries()] : Object.entries(metadata);
  for (const [k, v] of entries) {
    if (typeof k !== 'string' || typeof v !== 'string') {
      throw new TensorportError('InvalidMetadata', `metadata ${typeof k === 'string' ? `value for ${JSON.stringify(k)}` : 'key'} must be a string, got ${describe(typeof k === 'string' ? v : k)}`);
    }
    checkUnicode(k, 'metadata key');
    checkUnicode(v, `metadata value for ${JSON.stringify(k)}`);
  }
  return entries as Array<[string, string]>;
}

/**
 * The per-tensor checks of `planSafetensors` (names, dtypes, shapes, byte lengths) without building
 * a header: for callers that split tensors over several files and must see all names at once.
 */
export function checkTensorLayouts(tensors: readonly TensorLayout[]): void {
  const seen = new Set<string>();
  for (const t of tensors) {
    const name = t.name;
    if (typeof name !== 'string') throw new TensorportError('TensorInvalidInfo', `tensor name must be a string, got ${describe(name)}`);
    if (name === '__metadata__') {
      throw new TensorportError('ReservedTensorName', 'a tensor cannot be named "__metadata__": the file could not be read back', { tensor: name });
    }
    if (seen.has(name)) throw new TensorportError('DuplicateTensorName', `two tensors are named ${JSON.stringify(name)}`, { tensor: name });
    seen.add(name);
    checkUnicode(name, 'tensor name', name);
    if (typeof t.dtype !== 'string' || !isDType(t.dtype)) {
      throw new TensorportError('UnknownDtype', `tensor ${JSON.stringify(name)} has unknown dtype ${describe(t.dtype)}`, { tensor: name });
    }
    if (!Array.isArray(t.shape) || !t.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      throw new TensorportError('TensorInvalidInfo', `tensor ${JSON.stringify(name)} has an invalid shape`, { tensor: name });
    }
    const expected = expectedByteLength(t.dtype, t.shape, name);
    if (t.byteLength !== expected) {
      throw new TensorportError(
        'TensorByteLengthMismatch',
        `tensor ${JSON.stringify(name)} (${t.dtype} [${t.shape.join(', ')}]) needs ${expected} bytes, descriptor says ${describe(t.byteLength)}`,
        { tensor: name },
      );
    }
  }
}

/** A lone surrogate has no UTF-8 encoding: TextEncoder would silently write U+FFFD instead. */
function checkUnicode(s: string, what: string, tensor?: string): void {
  if (LONE_SURROGATE.test(s)) {
    throw new TensorportError('InvalidHeaderUtf8', `${what} ${JSON.stringify(s)} contains a lone surrogate, which UTF-8 cannot encode`, tensor === undefined ? {} : { tensor });
  }
}
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * The header JSON exactly as serde_json writes the reference's struct: compact, `__metadata__`
 * first, then tensors in write order, fields `dtype, shape, data_offsets`. Built string by string:
 * a JS object would put integer-like keys ("2", "10") first. `JSON.stringify` of a single string
 * escapes exactly like serde_json (only `"`, `\` and controls < 0x20, as \b \t \n \f \r or
 * \u00xx with lowercase hex; everything else raw).
 */
function headerBytes(
  tensors: readonly TensorLayout[],
  order: readonly number[],
  begins: Float64Array,
  meta: ReadonlyArray<[string, string]> | null,
): Uint8Array {
  // Made twice, piece by piece: once to size the buffer, once to encode into it. A 100,000-tensor
  // header is then one 10 MB buffer, not 100,000 strings, their join and its encoding.
  const pieces = function* (): Generator<string> {
    yield '{';
    if (meta !== null) yield '"__metadata__":{' + meta.map(([k, v]) => JSON.stringify(k) + ':' + JSON.stringify(v)).join(',') + '}';
    let first = meta === null;
    for (const i of order) {
      const t = tensors[i]!;
      const begin = begins[i]!;
      yield `${first ? '' : ','}${JSON.stringify(t.name)}:{"dtype":"${t.dtype}","shape":[${t.shape.join(',')}],"data_offsets":[${begin},${begin + t.byteLength}]}`;
      first = false;
    }
    yield '}';
  };
  let n = 0;
  for (const p of pieces()) {
    n += utf8Length(p);
    if (n > MAX_HEADER_BYTES) throw headerTooLarge(n);
  }
  // padded with spaces to a multiple of 8, as the reference pads
  const padded = Math.ceil(n / 8) * 8;
  if (padded > MAX_HEADER_BYTES) throw headerTooLarge(padded);
  const out = new Uint8Array(8 + padded);
  new DataView(out.buffer).setBigUint64(0, BigInt(padded), true);
  const enc = new TextEncoder();
  let at = 8;
  for (const p of pieces()) at += enc.encodeInto(p, out.subarray(at)).written;
  out.fill(0x20, at);
  return out;
}

/** UTF-8 bytes of a string without lone surrogates (checkUnicode refused them). */
function utf8Length(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 2; // a pair: two units, four bytes
      i++;
    }
    else n += 2;
  }
  return n;
}

function headerTooLarge(n: number): TensorportError {
  return new TensorportError('HeaderTooLarge', `header would be at least ${n} bytes; the reference reads at most ${MAX_HEADER_BYTES}`);
}

function describe(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? v.slice(0, 40) + '…' : v);
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  return v === null ? 'null' : typeof v;
}
