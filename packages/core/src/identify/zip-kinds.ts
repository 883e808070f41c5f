import type { ZipArchive } from '../zip/reader.ts';
import type { IdentifiedKind } from './kinds.ts';

/**
 * What a ZIP holds, from its member names only (the central directory), so core needs neither
 * the npz nor the torch-zip package:
 *   - `[Content_Types].xml` (+ `matlab/`): an OPC package, a MATLAB Live Script when it has matlab/ parts;
 *   - `metadata.json`, `config.json` and `model.weights.h5` at the root: a Keras 3 `.keras` archive;
 *   - every member under one `<prefix>/` with `<prefix>/archive_format`: a torch.export `.pt2`;
 *   - every member under one `<prefix>/`, with `<prefix>/constants.pkl` or `<prefix>/code/…`: TorchScript;
 *   - with `<prefix>/data.pkl`: a torch.save checkpoint;
 *   - every member ending in `.npy`: NumPy .npz (MLX quantized when a `.scales.npy` sits beside a
 *     `.weight.npy`, checked by the caller).
 */
export function zipKind(names: readonly string[]): IdentifiedKind {
  if (names.includes('[Content_Types].xml')) return names.some((n) => n.startsWith('matlab/')) ? 'matlab-live-script' : 'zip';
  // Keras 3 saving_lib writes these three at the root (weights in .h5, or .npz for some stores)
  if (names.includes('metadata.json') && names.includes('config.json') && names.some((n) => n === 'model.weights.h5' || n === 'model.weights.npz')) return 'keras';
  const prefixes = new Set(names.map((n) => (n.includes('/') ? n.slice(0, n.indexOf('/')) : '')));
  if (prefixes.size === 1 && !prefixes.has('')) {
    const [p] = prefixes;
    // torch.export.save (torch/export/pt2_archive): `<p>/archive_format` holds "pt2"
    if (names.includes(`${p}/archive_format`)) return 'torch-export';
    if (names.includes(`${p}/constants.pkl`) || names.some((n) => n.startsWith(`${p}/code/`))) return 'torchscript';
    if (names.includes(`${p}/data.pkl`)) return 'torch-zip';
  }
  if (names.length > 0 && names.every((n) => n.endsWith('.npy'))) return 'npz';
  return 'zip';
}

/** `X.weight` names that have an `X.scales` beside them (MLX's quantized layers). */
export function quantizedPairs(names: Iterable<string>, suffix = ''): string[] {
  const set = new Set(names);
  const out: string[] = [];
  for (const n of set) {
    if (!n.endsWith(`.weight${suffix}`)) continue;
    const base = n.slice(0, -`.weight${suffix}`.length);
    if (set.has(`${base}.scales${suffix}`)) out.push(n);
  }
  return out;
}

/** An .npz member's dtype descr from its .npy header prefix, e.g. '<u4'; null when unreadable. */
export async function npyDescr(zip: ZipArchive, name: string): Promise<string | null> {
  const entry = zip.get(name);
  if (!entry) return null;
  try {
    const head = await zip.readPrefix(entry, 256);
    const text = new TextDecoder('latin1').decode(head);
    return /'descr':\s*'([^']+)'/.exec(text)?.[1] ?? null;
  } catch {
    // Deflated without a codec, or damaged: the names alone decide.
    return null;
  }
}
