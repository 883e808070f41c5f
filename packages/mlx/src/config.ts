/**
 * The `quantization` section of an MLX model's config.json (mirrored by mlx-lm into
 * `quantization_config`): default `group_size`, `bits`, `mode` (absent before Aug 2025, meaning
 * affine), plus entries keyed by module path: a dict gives that module's `to_quantized` arguments
 * (a key it leaves out takes that function's default, not the section's),
 * `false` marks it unquantized, `true` means the defaults (older mlx-lm wrote one entry per leaf).
 */
import { compareUtf8, editJsonObject, TensorportError } from '@tensorport/core';
import { pythonJson } from './pyjson.ts';
import { FP_MODES, type FpMode } from './fp.ts';

export type QuantMode = 'affine' | FpMode;

export interface QuantParams {
  mode: QuantMode;
  bits: number;
  groupSize: number;
}

export interface QuantizationConfig {
  /** Which key it came from. */
  key: 'quantization' | 'quantization_config';
  defaults: Partial<QuantParams>;
  /** Module path → override (`{}` for `true`) or `false`. */
  modules: Map<string, Partial<QuantParams> | false>;
}

/** Keys some producers add to the section that carry no per-module meaning. */
const IGNORED_KEYS = new Set(['quant_method', 'linear_class', 'quantization_mode']);

/** `to_quantized`'s defaults per mode (python/mlx/nn/layers/quantized.py `_defaults_for_mode`). */
export function modeDefaults(mode: QuantMode): { bits: number; groupSize: number } {
  return mode === 'affine' ? { bits: 4, groupSize: 64 } : FP_MODES[mode];
}

export function isQuantMode(m: unknown): m is QuantMode {
  return m === 'affine' || (typeof m === 'string' && Object.hasOwn(FP_MODES, m));
}

function bad(message: string): TensorportError {
  return new TensorportError('MlxInvalidConfig', message);
}

function parseParams(where: string, o: Record<string, unknown>): Partial<QuantParams> {
  const out: Partial<QuantParams> = {};
  for (const [k, field] of [['bits', 'bits'], ['group_size', 'groupSize']] as const) {
    const v = o[k];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0) throw bad(`${where}.${k} must be a positive integer, not ${JSON.stringify(v)}`);
    out[field] = v;
  }
  const mode = o.mode;
  if (mode !== undefined && mode !== null) {
    if (!isQuantMode(mode)) throw bad(`${where}.mode ${JSON.stringify(mode)} is not one of affine, mxfp4, mxfp8, nvfp4`);
    out.mode = mode;
  }
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Reads the quantization section of a parsed config.json, or null when it has none. A
 * `quantization_config` that names a non-MLX `quant_method` (AWQ, GPTQ, FP8, compressed-tensors)
 * describes other tensor names and is ignored; `quant_method: "mxfp4"` (gpt-oss) maps to mxfp4 as
 * the mlx-lm loader does.
 */
export function parseQuantizationConfig(config: unknown): QuantizationConfig | null {
  if (config === undefined || config === null) return null;
  if (!isObject(config)) throw bad('config.json must hold a JSON object');
  let key: QuantizationConfig['key'] = 'quantization';
  let section = config.quantization;
  if (section === undefined || section === null) {
    key = 'quantization_config';
    section = config.quantization_config;
  }
  if (section === undefined || section === null) return null;
  if (!isObject(section)) throw bad(`config.json "${key}" must be an object`);
  const method = section.quant_method;
  if (key === 'quantization_config' && method !== undefined) {
    if (method !== 'mxfp4') return null;
    return { key, defaults: { mode: 'mxfp4', bits: 4, groupSize: 32 }, modules: new Map() };
  }
  const defaults = parseParams(key, section);
  const modules = new Map<string, Partial<QuantParams> | false>();
  for (const [name, v] of Object.entries(section)) {
    if (name === 'bits' || name === 'group_size' || name === 'mode' || IGNORED_KEYS.has(name)) continue;
    if (v === false) modules.set(name, false);
    else if (v === true) modules.set(name, {});
    else if (isObject(v)) {
      // mlx-lm's loader passes the dict to `to_quantized(**dict)`: a missing key takes that
      // function's default (mode affine, then the mode's bits / group size), not the section's.
      const p = parseParams(`${key}["${name}"]`, v);
      const mode = p.mode ?? 'affine';
      modules.set(name, { mode, ...modeDefaults(mode), ...p });
    }
    else throw bad(`config.json ${key}["${name}"] must be an object or a boolean, not ${JSON.stringify(v)}`);
  }
  return { key, defaults, modules };
}

/** The quantization hints our own writer puts in `__metadata__` (MLX itself writes none). */
export function parseQuantizationMetadata(metadata: ReadonlyMap<string, string> | null | undefined): Partial<QuantParams> {
  const out: Partial<QuantParams> = {};
  if (!metadata) return out;
  for (const [key, field] of [['quantization_bits', 'bits'], ['quantization_group_size', 'groupSize']] as const) {
    const v = metadata.get(key);
    if (v === undefined) continue;
    if (!/^[1-9][0-9]{0,5}$/.test(v)) throw bad(`__metadata__ ${key} must be a positive decimal integer, not ${JSON.stringify(v)}`);
    out[field] = Number(v);
  }
  const mode = metadata.get('quantization_mode');
  if (mode !== undefined) {
    if (!isQuantMode(mode)) throw bad(`__metadata__ quantization_mode ${JSON.stringify(mode)} is not one of affine, mxfp4, mxfp8, nvfp4`);
    out.mode = mode;
  }
  return out;
}

// --- config.json text kept as the input had it (issue 11 item 3) ---
// A JS round trip turns Python's `0.0`/`30.0` into `0`/`30`, which transformers' strict config
// classes refuse. So a config read from a file remembers its text, copies made by withQuantization
// inherit it, and formatConfigJson edits that text (core's editJsonObject): only the top-level
// members whose value changed are replaced, inserted or removed; every other byte stays.
const CONFIG_TEXT = new WeakMap<object, string>();

/** Records the text `config` was parsed from, so formatConfigJson writes that text back edited. */
export function rememberConfigText(config: Record<string, unknown>, text: string): void {
  CONFIG_TEXT.set(config, text);
}

function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

function editedConfigText(text: string, config: Record<string, unknown>): string {
  const before = JSON.parse(text) as Record<string, unknown>;
  const changes = new Map<string, unknown>();
  for (const k of Object.keys(before)) if (!Object.hasOwn(config, k)) changes.set(k, undefined);
  for (const [k, v] of Object.entries(config)) if (v !== undefined && !sameJson(before[k], v)) changes.set(k, v);
  // as mlx-lm's save_config: the local path the model was loaded from is not kept
  changes.set('_name_or_path', undefined);
  return editJsonObject(text, changes);
}
// --- end of config.json text editing ---

/**
 * config.json as it is written: the input's own text with only the changed members edited (and
 * `_name_or_path` dropped) when the config came from a file (see rememberConfigText); otherwise as mlx-lm's save_config writes
 * it: `_name_or_path` dropped, top-level keys sorted (by code point), `json.dump(indent=4)`.
 */
export function formatConfigJson(config: Record<string, unknown>): string {
  const text = CONFIG_TEXT.get(config);
  if (text !== undefined) return editedConfigText(text, config);
  const sorted: Record<string, unknown> = {};
  for (const k of Object.keys(config).sort(compareUtf8)) if (k !== '_name_or_path') sorted[k] = config[k];
  return pythonJson(sorted);
}

export function quantizationSection(defaults: QuantParams, overrides: ReadonlyMap<string, QuantParams | false>): Record<string, unknown> {
  const section: Record<string, unknown> = { group_size: defaults.groupSize, bits: defaults.bits, mode: defaults.mode };
  for (const [path, p] of overrides) section[path] = p === false ? false : { group_size: p.groupSize, bits: p.bits, mode: p.mode };
  return section;
}

/** A copy of `config` with the quantization section (and its mirror) replaced, or removed. */
export function withQuantization(config: Record<string, unknown> | undefined, section: Record<string, unknown> | null): Record<string, unknown> {
  const out: Record<string, unknown> = { ...(config ?? {}) };
  delete out.quantization;
  delete out.quantization_config;
  if (section) {
    out.quantization = section;
    out.quantization_config = structuredClone(section);
  }
  const text = config === undefined ? undefined : CONFIG_TEXT.get(config);
  if (text !== undefined) CONFIG_TEXT.set(out, text);
  return out;
}
