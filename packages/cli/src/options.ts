/** Option parsers shared by the commands: every flag means the same thing wherever it appears. */
import { InvalidArgumentError } from 'commander';
import { defaultRegistry, dtypeFromName, GGUF_WRITE_TYPES, TensorportError, type CastTarget, type DType, type ReadOptions } from '@tensorport/lib';
import { isBitsUnit, isFractionalBytes, parseSize } from './size.ts';

const DTYPE_CHOICES = ['f16', 'bf16', 'f32'];

export function parseDtype(value: string): CastTarget {
  const v = value.toLowerCase();
  if (!DTYPE_CHOICES.includes(v)) throw new InvalidArgumentError(`expected one of ${DTYPE_CHOICES.join(', ')}`);
  return v.toUpperCase() as CastTarget;
}

/** The names `--to` takes: the formats of the registry that write. */
export const OUTPUT_FORMAT_NAMES: readonly string[] = defaultRegistry.formats.filter((f) => f.write).map((f) => f.name);

/** `--to`: a format of the registry that writes (case-insensitive name). */
export function parseOutputFormat(value: string): string {
  const names = OUTPUT_FORMAT_NAMES;
  const v = value.toLowerCase();
  if (!names.includes(v)) throw new InvalidArgumentError(`expected one of ${names.join(', ')}`);
  return v;
}

/** `--gguf-type`: a ggml type the GGUF writer quantizes to (the gguf package's list). */
export function parseGgufType(value: string): string {
  const v = value.toUpperCase();
  if (!GGUF_WRITE_TYPES.includes(v)) throw new InvalidArgumentError(`expected one of ${GGUF_WRITE_TYPES.join(', ')}`);
  return v;
}

export function parseSizeOption(value: string): number {
  const n = parseSize(value);
  if (n === null && isBitsUnit(value.trim().replace(/^[\d.\s]+/, ''))) {
    throw new InvalidArgumentError(`a lowercase 'b' means bits in transformers; write ${value.trim().toUpperCase()} for bytes (or GiB/MiB for powers of 2)`);
  }
  if (isFractionalBytes(value)) throw new InvalidArgumentError(`${value.trim()} is not a whole number of bytes (a fraction needs a unit that makes it whole, e.g. 1.5GB)`);
  if (n === null || n <= 0) throw new InvalidArgumentError('expected a size such as 5GB, 5GiB, 500MB or a byte count');
  return n;
}

/** `--jobs`: how many things at once, a positive integer. */
export function parseJobs(value: string): number {
  const n = /^\d+$/.test(value.trim()) ? Number(value.trim()) : NaN;
  if (!(Number.isSafeInteger(n) && n >= 1 && n <= 64)) throw new InvalidArgumentError('expected a whole number from 1 to 64');
  return n;
}

/**
 * `--metadata KEY=VALUE`, repeatable: the pairs so far plus this one. The key is everything before
 * the first '=' (a value may hold '='); an empty key, a missing '=', a repeated key or the reserved
 * `__metadata__` are refused.
 */
export function parseMetadataPair(value: string, previous: Record<string, string> | undefined): Record<string, string> {
  const at = value.indexOf('=');
  const key = at < 0 ? '' : value.slice(0, at);
  if (at < 0 || key.trim() === '') throw new InvalidArgumentError(`expected KEY=VALUE (e.g. format=pt), got '${value}'`);
  if (key === '__metadata__') throw new InvalidArgumentError('__metadata__ is the name of the metadata itself, not a key');
  const pairs = previous ?? {};
  if (Object.hasOwn(pairs, key)) throw new InvalidArgumentError(`the key '${key}' is given twice`);
  return { ...pairs, [key]: value.slice(at + 1) };
}

export function parsePort(value: string): number {
  const n = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!(n >= 0 && n <= 65535)) throw new InvalidArgumentError('expected a port number from 0 to 65535');
  return n;
}

/** The reader flags of inspect, validate, convert and diff. */
export interface ReadFlags {
  void1?: string;
  select?: string;
  keepAliases?: boolean;
  /** torch: foreign globals become inert placeholders (extraction mode, docs/security.md). */
  allowObjects?: boolean;
  name?: string;
  /** `--no-crc` (commander's negation: false when given). */
  crc?: boolean;
}

/** `--void1`: the one-byte dtype a `<V1` array holds (ml_dtypes writes float8 that way). */
function void1Of(v: string | undefined): { void1?: DType } {
  if (v === undefined) return {};
  // torch's and ml_dtypes' spellings too (f8_e4m3fn, float8_e4m3fn): core's dtypeFromName
  const d = dtypeFromName(v);
  if (d === null) throw new TensorportError('InvalidOption', `--void1 ${v}: not a dtype (e.g. F8_E4M3 or f8_e4m3fn, F8_E5M2, U8)`);
  return { void1: d };
}

/** The flags as each format's own reader options. */
export function readOptions(flags: ReadFlags): ReadOptions {
  const void1 = void1Of(flags.void1);
  return {
    npz: { ...void1, ...(flags.crc === false ? { verifyCrc: false } : {}) },
    npy: { ...void1, ...(flags.name === undefined ? {} : { name: flags.name }) },
    torch: { ...(flags.select === undefined ? {} : { select: flags.select }), ...(flags.keepAliases ? { keepAliases: true } : {}), ...(flags.allowObjects ? { allowObjects: true } : {}) },
  };
}
