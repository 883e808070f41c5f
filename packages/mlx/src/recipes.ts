/**
 * mlx-lm's choices of per-layer quantization, as predicates over a flat checkpoint's tensors:
 * - the mixed recipes of `mlx_lm.convert --quant-predicate` (mlx_lm/convert.py
 *   `mixed_quant_predicate_builder`), which replace any model rule;
 * - the per-architecture `quant_predicate` of mlx_lm/models/*.py (MoE routers at 8 bits, group 64),
 *   which `quantize_model` uses when no recipe is given;
 * - our own per-layer overrides (`--bits-for 'regex=bits[/group]'`), applied over either.
 * Paths are module paths as the checkpoint names them (tensor name minus `.weight`); mlx-lm sees
 * them after its `sanitize`, so for architectures whose sanitize renames tensors, give an
 * MLX-layout checkpoint.
 */
import { TensorportError } from '@tensorport/core';
import type { QuantPredicate, QuantSpec } from './quant-spec.ts';
import type { TensorInfo } from './layers.ts';

export const MIXED_RECIPES = ['mixed_2_6', 'mixed_3_4', 'mixed_3_6', 'mixed_4_6'] as const;
export type MixedRecipe = (typeof MIXED_RECIPES)[number];

const RECIPE_BITS: Record<MixedRecipe, { low: number; high: number }> = {
  mixed_2_6: { low: 2, high: 6 },
  mixed_3_4: { low: 3, high: 4 },
  mixed_3_6: { low: 3, high: 6 },
  mixed_4_6: { low: 4, high: 6 },
};

function recipeError(message: string): TensorportError {
  return new TensorportError('MlxUnsupportedQuantization', message);
}

function modulePaths(tensors: readonly TensorInfo[]): string[] {
  const seen = new Set<string>();
  for (const t of tensors) {
    const i = t.name.lastIndexOf('.');
    if (i > 0) seen.add(t.name.slice(0, i));
  }
  return [...seen];
}

/** `num_hidden_layers` of the config (or its `text_config`), what `len(model.layers)` is built from. */
function configLayers(config: unknown): number | null {
  if (typeof config !== 'object' || config === null) return null;
  const c = config as Record<string, unknown>;
  const text = typeof c.text_config === 'object' && c.text_config !== null ? (c.text_config as Record<string, unknown>) : {};
  const n = c.num_hidden_layers ?? text.num_hidden_layers;
  return typeof n === 'number' && Number.isSafeInteger(n) && n > 0 ? n : null;
}

export interface RecipeLayout {
  /** Index of the path component that holds the layer number. */
  location: number;
  /** `len(model.layers)`. */
  layers: number;
}

/**
 * Where the layer index sits (the first all-digit component of a `down_proj` module path) and how
 * many layers there are (config `num_hidden_layers`, else one more than the largest index seen).
 */
export function recipeLayout(tensors: readonly TensorInfo[], config?: unknown): RecipeLayout {
  const down = modulePaths(tensors).filter((p) => p.includes('down_proj'));
  if (down.length === 0) throw recipeError('the model has no down_proj module, which the mixed recipes need to find its layers (mlx-lm refuses it too)');
  const locations = new Set(down.map((p) => p.split('.').findIndex((k) => /^\d+$/.test(k))));
  if (locations.has(-1) || locations.size !== 1) {
    throw recipeError(`the down_proj modules do not all hold a layer index at the same place (${down.slice(0, 3).join(', ')}…)`);
  }
  const location = [...locations][0]!;
  let layers = configLayers(config);
  if (layers === null) {
    let max = -1;
    for (const p of down) max = Math.max(max, Number(p.split('.')[location]));
    layers = max + 1;
  }
  return { location, layers };
}

/**
 * mlx-lm's mixed recipe: v_proj / v_a_proj / v_b_proj and down_proj get the high bits in the first
 * and last eighth of the layers and every third layer between; lm_head always; the rest low bits.
 * Every quantized layer gets a dict (so a config entry), with `groupSize` as given (null when the
 * command line gave none, as mlx-lm writes it).
 */
export function mixedRecipePredicate(recipe: MixedRecipe, layout: RecipeLayout, groupSize: number | null): QuantPredicate {
  const bits = RECIPE_BITS[recipe];
  if (!bits) throw recipeError(`unknown recipe ${String(recipe)}: expected one of ${MIXED_RECIPES.join(', ')}`);
  const n = layout.layers;
  const eighth = Math.floor(n / 8);
  const lastEighth = Math.floor((7 * n) / 8);
  return (t) => {
    const parts = t.path.split('.');
    let index = 0;
    if (parts.length > layout.location) {
      const k = parts[layout.location]!;
      // Python's int(): a non-number here is an error in mlx-lm too.
      if (!/^\s*[+-]?\d+\s*$/.test(k)) throw recipeError(`${t.path}: component ${layout.location} (${JSON.stringify(k)}) is not a layer index`);
      index = Number(k);
    }
    const more = index < eighth || index >= lastEighth || (index - eighth) % 3 === 2;
    const p = t.path;
    const high = (more && (p.includes('v_proj') || p.includes('v_a_proj') || p.includes('v_b_proj') || p.includes('down_proj'))) || p.includes('lm_head');
    return { groupSize, bits: high ? bits.high : bits.low, mode: 'affine' };
  };
}

/** The `quant_predicate` of mlx_lm/models/<model_type>.py (after mlx-lm's MODEL_REMAPPING). */
const ROUTER_8BIT = { groupSize: 64, bits: 8 } as const;
const MODEL_RULES: { types: readonly string[]; test: (path: string) => boolean; spec: QuantSpec }[] = [
  { types: ['Klear', 'kimi_linear', 'mellum', 'qwen3_moe', 'qwen3_vl_moe'], test: (p) => p.endsWith('mlp.gate'), spec: ROUTER_8BIT },
  { types: ['qwen3_next', 'qwen3_5', 'qwen3_5_moe'], test: (p) => p.endsWith('mlp.gate') || p.endsWith('shared_expert_gate'), spec: ROUTER_8BIT },
  { types: ['afmoe'], test: (p) => p.includes('router.gate'), spec: ROUTER_8BIT },
  { types: ['bailing_moe', 'bailing_moe_linear'], test: (p) => p.endsWith('mlp.gate.gate_proj'), spec: ROUTER_8BIT },
  { types: ['gemma4', 'gemma4_text', 'gemma4_unified'], test: (p) => p.endsWith('router.proj'), spec: ROUTER_8BIT },
  { types: ['gpt_oss', 'jamba'], test: (p) => p.endsWith('router'), spec: ROUTER_8BIT },
  { types: ['granitemoe'], test: (p) => p.endsWith('block_sparse_moe.router.layer'), spec: ROUTER_8BIT },
  { types: ['granitemoehybrid'], test: (p) => p.endsWith('router.layer'), spec: ROUTER_8BIT },
  { types: ['lfm2_moe'], test: (p) => p.endsWith('feed_forward.gate'), spec: ROUTER_8BIT },
  { types: ['longcat_flash', 'longcat_flash_ngram'], test: (p) => p.endsWith('classifier'), spec: ROUTER_8BIT },
  { types: ['minimax', 'minimax_m2'], test: (p) => p.endsWith('block_sparse_moe.gate'), spec: ROUTER_8BIT },
  { types: ['step3p5'], test: (p) => p.includes('mlp.gate.gate'), spec: ROUTER_8BIT },
  { types: ['rwkv7'], test: (p) => p.includes('lora.2') || p.includes('embeddings'), spec: { bits: 8 } },
];

/** The architecture's rule for config.json's `model_type`, or null when mlx-lm has none. */
export function modelPredicate(config: unknown): QuantPredicate | null {
  if (typeof config !== 'object' || config === null) return null;
  const type = (config as Record<string, unknown>).model_type;
  if (typeof type !== 'string') return null;
  const rule = MODEL_RULES.find((r) => r.types.includes(type));
  if (!rule) return null;
  return (t) => (rule.test(t.path) ? { ...rule.spec } : true);
}

/** One `--bits-for` rule: module paths matching `pattern` get `spec` (or stay float). */
export interface LayerOverride {
  pattern: RegExp;
  spec: QuantSpec | false;
}

/**
 * Parses `regex=bits`, `regex=bits/group_size` or `regex=float` (keep the layer unquantized). The
 * regex is searched in the module path; `=` splits at its last occurrence.
 */
export function parseLayerOverride(text: string): LayerOverride {
  const at = text.lastIndexOf('=');
  if (at <= 0) throw new TensorportError('InvalidOption', `--bits-for ${JSON.stringify(text)}: expected 'pattern=bits', 'pattern=bits/group_size' or 'pattern=float'`);
  let pattern: RegExp;
  try {
    pattern = new RegExp(text.slice(0, at));
  } catch (e) {
    throw new TensorportError('InvalidOption', `--bits-for ${JSON.stringify(text)}: ${(e as Error).message}`);
  }
  const value = text.slice(at + 1).trim();
  if (value === 'float') return { pattern, spec: false };
  const m = /^(\d+)(?:\/(\d+))?$/.exec(value);
  if (!m) throw new TensorportError('InvalidOption', `--bits-for ${JSON.stringify(text)}: ${JSON.stringify(value)} is not bits, bits/group_size or float`);
  return { pattern, spec: { ...(m[2] === undefined ? {} : { groupSize: Number(m[2]) }), bits: Number(m[1]), mode: 'affine' } };
}

/**
 * `base` with overrides on top: the first override whose pattern matches the path decides. An
 * override without a group size takes the run's (affine runs) or 64.
 */
export function withOverrides(base: QuantPredicate | undefined, overrides: readonly LayerOverride[]): QuantPredicate | undefined {
  if (overrides.length === 0) return base;
  return (t, defaults) => {
    const o = overrides.find((r) => r.pattern.test(t.path));
    if (!o) return base ? base(t, defaults) : true;
    if (o.spec === false) return false;
    return { groupSize: o.spec.groupSize ?? (defaults.mode === 'affine' ? defaults.groupSize : 64), bits: o.spec.bits!, mode: 'affine' };
  };
}
