/**
 * Which name a tied weight keeps when it is written once.
 *
 * transformers declares ties per model class as `_tied_weights_keys = {target: source}` and its
 * save path deletes the target: across the 5.x model zoo the source is the input embedding
 * (`model.embed_tokens.weight`, `transformer.wte.weight`, `shared.weight`, ...) and the target the
 * output head (`lm_head.weight`, `embed_out.weight`, `proj_out.weight`, ...). On load it re-ties the
 * head from the embedding when the config's `tie_word_embeddings` is true (its default). Without
 * the model class, the embedding is recognised by its module's name.
 */

/** What a model directory's config.json says about tying (null fields: not stated). */
export interface TiedWeightsConfig {
  /** `tie_word_embeddings` (top level, else `text_config`'s); null when absent (transformers' default is true). */
  readonly tieWordEmbeddings: boolean | null;
  /** Where it came from, for messages. */
  readonly path?: string;
}

// Input-embedding modules in transformers' `_tied_weights_keys` sources (the module owning `.weight`).
const INPUT_EMBEDDING_MODULES = new Set(['embed_tokens', 'wte', 'word_embeddings', 'word_embedding', 'shared', 'embeddings', 'embed_in', 'tok_embeddings', 'tokens_embed']);

function isInputEmbedding(name: string): boolean {
  const parts = name.split('.');
  return parts.length >= 2 && parts[parts.length - 1] === 'weight' && INPUT_EMBEDDING_MODULES.has(parts[parts.length - 2]!);
}

/** The name written for a group of tied names: the input embedding when exactly one is, else the first in sorted order. */
export function keptTiedName(names: readonly string[]): string {
  const embeddings = names.filter(isInputEmbedding);
  if (embeddings.length === 1) return embeddings[0]!;
  return [...(embeddings.length > 1 ? embeddings : names)].sort()[0]!;
}

/**
 * Whether a tied group may be written once: not when config.json says `tie_word_embeddings: false`
 * for an embedding tie, because transformers would then not re-tie the head and load it random.
 */
export function mayWriteOnce(names: readonly string[], config: TiedWeightsConfig | undefined): boolean {
  return !(config?.tieWordEmbeddings === false && names.some(isInputEmbedding));
}

/** A model's config.json is a few KB; a bigger one is not read. */
export const MAX_MODEL_CONFIG_BYTES = 4 * 1024 * 1024;

/** The tying fields of config.json's bytes; undefined when they are not a JSON object (then it says nothing about ties). */
export function tiedWeightsFromJson(bytes: Uint8Array, path?: string): TiedWeightsConfig | undefined {
  try {
    const parsed = JSON.parse(new TextDecoder().decode(bytes)) as unknown;
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? tiedWeightsConfig(parsed, path) : undefined;
  } catch {
    return undefined;
  }
}

/** Reads the tying fields from a parsed config.json (anything else in it is ignored). */
export function tiedWeightsConfig(parsed: unknown, path?: string): TiedWeightsConfig {
  const field = (o: unknown): boolean | null => {
    if (typeof o !== 'object' || o === null) return null;
    const v = (o as Record<string, unknown>).tie_word_embeddings;
    return typeof v === 'boolean' ? v : null;
  };
  const text = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>).text_config : undefined;
  return { tieWordEmbeddings: field(parsed) ?? field(text), ...(path === undefined ? {} : { path }) };
}
