import type { ByteSource } from '../io/source.ts';
import { createProbe } from './probe.ts';
import type { Identification, IdentifyOptions, Identified, KindIdentifier, KindInfo } from './types.ts';

/** Kinds every identify knows, whoever else takes part: no content at all, and none anyone recognised. */
export const BASE_KINDS: Readonly<Record<'empty' | 'unknown', KindInfo>> = {
  empty: { what: 'an empty file', can: 'not supported: no content', extensions: [] },
  unknown: { what: 'no format tensorport knows', can: 'not supported: unknown content', extensions: [] },
};

/** Every kind the identifiers name, in their order (which also decides what an extension "usually" is). */
export function kindsOf(identifiers: readonly KindIdentifier[]): Record<string, KindInfo> {
  const out: Record<string, KindInfo> = {};
  for (const i of identifiers) for (const [k, info] of Object.entries(i.kinds)) if (!(k in out)) out[k] = info;
  return { ...out, ...BASE_KINDS };
}

/**
 * Names a file's format from its bytes (never from its name), reading a few KB: magic numbers,
 * the safetensors header, a ZIP's central directory names, each read once for all identifiers.
 * The identifiers (each format package's part, assembled by the `tensorport` library) are asked in
 * order; the name's extension is only compared afterwards, for a warning.
 */
export async function identifyWith(identifiers: readonly KindIdentifier[], source: ByteSource, options: IdentifyOptions = {}): Promise<Identification> {
  const kinds = kindsOf(identifiers);
  const probe = await createProbe(source, options);
  let found: Identified = { kind: 'empty' };
  if (source.size > 0) {
    found = { kind: 'unknown' };
    for (const i of identifiers) {
      if (i.refines) continue;
      const r = await i.identify(probe);
      if (r) {
        found = r;
        break;
      }
    }
    for (const i of identifiers) {
      if (!i.refines?.includes(found.kind)) continue;
      const r = await i.identify(probe, found);
      if (r) found = r;
    }
  }
  const info = kinds[found.kind] ?? BASE_KINDS.unknown;
  const warnings = [...probe.warnings];
  const ext = extensionOf(source.name);
  if (ext && info.extensions.length > 0 && !info.extensions.some((e) => source.name.toLowerCase().endsWith(e))) {
    warnings.push({
      code: 'ExtensionMismatch',
      message: `${source.name} has the extension '${ext}' (${extensionMeaning(kinds, ext)}) but its bytes are ${info.what}`,
      path: source.name,
    });
  }
  return {
    kind: found.kind, what: info.what, can: info.can, ...(found.container ? { container: found.container } : {}),
    ...(probe.members ? { members: probe.members } : {}), details: probe.details, warnings, bytesRead: probe.bytesRead,
  };
}

function extensionOf(name: string): string {
  const base = name.slice(name.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(dot).toLowerCase() : '';
}

function extensionMeaning(kinds: Record<string, KindInfo>, ext: string): string {
  if (ext === '.mlx') return 'usually a MATLAB Live Script';
  const owner = Object.values(kinds).find((k) => k.extensions.includes(ext));
  return owner ? `usually ${owner.what}` : 'no format tensorport knows';
}
