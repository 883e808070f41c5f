import type { FOREIGN_KINDS } from './kinds.ts';

/**
 * What a ZIP no format package claimed holds, from its member names only (the central directory):
 *   - `[Content_Types].xml` (+ `matlab/`): an OPC package, a MATLAB Live Script when it has matlab/ parts;
 *   - `metadata.json`, `config.json` and `model.weights.h5` at the root: a Keras 3 `.keras` archive.
 * torch archives (torch-zip) and npz (npz) are named by their own packages before this is asked.
 */
export function foreignZipKind(names: readonly string[]): keyof typeof FOREIGN_KINDS {
  if (names.includes('[Content_Types].xml')) return names.some((n) => n.startsWith('matlab/')) ? 'matlab-live-script' : 'zip';
  // Keras 3 saving_lib writes these three at the root (weights in .h5, or .npz for some stores)
  if (names.includes('metadata.json') && names.includes('config.json') && names.some((n) => n === 'model.weights.h5' || n === 'model.weights.npz')) return 'keras';
  return 'zip';
}
