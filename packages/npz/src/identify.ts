import { TensorportError, type KindIdentifier, type KindInfo, type ZipArchive } from '@tensorport/core';
import { parseNpyHeader, readNpyPrefix, startsWithNpyMagic } from './npy-header.ts';

export const NPZ_KINDS = {
  npy: { what: 'a NumPy .npy array', can: 'convert, inspect, validate', extensions: ['.npy'] },
  npz: { what: 'a NumPy .npz archive', can: 'convert, inspect, validate', extensions: ['.npz'] },
} as const satisfies Record<string, KindInfo>;

/** npz's part of `identify`: the .npy magic, and a ZIP whose every member is a `.npy`. */
export const npzIdentifier: KindIdentifier = {
  name: 'npz',
  kinds: NPZ_KINDS,
  async identify(probe) {
    if (startsWithNpyMagic(probe.head)) return { kind: 'npy' };
    if (probe.coarse !== 'zip') return null;
    const names = await probe.zipNames();
    return names !== null && names.length > 0 && names.every((n) => n.endsWith('.npy')) ? { kind: 'npz' } : null;
  },
};

/** An .npz member's dtype descr (`<u4`) from its header; null when it cannot be read (deflated without a codec, damaged). */
export async function npyMemberDescr(zip: ZipArchive, name: string): Promise<string | null> {
  const entry = zip.get(name);
  if (!entry) return null;
  try {
    return parseNpyHeader(await readNpyPrefix((n) => zip.readPrefix(entry, n), {}), name, {}, () => undefined).descr;
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
    return null;
  }
}
