import type { Finding, ZipArchive, ZipEntry } from '@tensorport/core';

/**
 * Member names as torch's reader compares them: miniz's default lookup (caffe2's
 * `mz_zip_reader_locate_file(..., flags 0)`) lowercases ASCII letters of the raw name bytes, so
 * `x/DATA.PKL` is torch's `x/data.pkl`, and an archive holding both has no defined `data.pkl`.
 */
export function foldName(bytes: Uint8Array): string {
  // One string per name, not one per byte: every member's name is folded, 100,000 for a large .pt.
  let folded: Uint8Array | null = null;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (b >= 0x41 && b <= 0x5a) (folded ??= bytes.slice())[i] = b + 0x20;
  }
  const src = folded ?? bytes;
  let s = '';
  for (let i = 0; i < src.length; i += 4096) s += String.fromCharCode.apply(null, src.subarray(i, i + 4096) as unknown as number[]);
  return s;
}

export interface TorchLayout {
  /** The first member's directory (torch's archive name), or null when it has none. */
  readonly prefix: string | null;
  /** A member folds to `<prefix>/data.pkl` or `<prefix>/constants.pkl`: torch.load would read it. */
  readonly torch: boolean;
  /** TorchScript markers and names equal once folded, as findings. */
  readonly findings: Finding[];
  /** The member torch would read for `<prefix>/<record>` (case-insensitively). */
  get(record: string): ZipEntry | undefined;
  /** `<prefix>/data/<digits>`: a storage torch reads as raw numbers, never as a pickle. */
  isStorage(e: ZipEntry): boolean;
}

const enc = new TextEncoder();

/** `e.name` itself when folding changes nothing (ASCII without capitals): no second string per member. */
function foldedName(e: ZipEntry): string {
  const b = e.nameBytes;
  for (let i = 0; i < b.length; i++) if (b[i]! >= 0x80 || (b[i]! >= 0x41 && b[i]! <= 0x5a)) return foldName(b);
  return e.name;
}

/** A record name (`data.pkl`, `data/17`) as torch looks it up. */
function foldRecord(record: string): string {
  return /^[\x00-\x7f]*$/.test(record) ? record.replace(/[A-Z]+/g, (c) => c.toLowerCase()) : foldName(enc.encode(record));
}

// One layout per archive: the scan and the reader of one Context share the archive, and so this.
const layouts = new WeakMap<ZipArchive, TorchLayout>();

export function torchLayout(zip: ZipArchive): TorchLayout {
  let layout = layouts.get(zip);
  if (!layout) layouts.set(zip, (layout = buildLayout(zip)));
  return layout;
}

function buildLayout(zip: ZipArchive): TorchLayout {
  const entries = zip.entries;
  const first = entries[0];
  const slash = first ? first.nameBytes.indexOf(0x2f) : -1;
  const prefix = first && slash > 0 ? foldName(first.nameBytes.subarray(0, slash)) : null;
  const storage = prefix === null ? null : new RegExp(`^${prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/data/[0-9]+$`);
  const codeDir = `${prefix}/code/`;
  let code: ZipEntry | undefined;
  let folds = false;
  for (const e of entries) {
    const k = foldedName(e);
    if (k !== e.name) folds = true;
    if (code === undefined && prefix !== null && k.startsWith(codeDir)) code = e;
  }
  // Names torch folds to one: only possible when folding changes some name (the ZIP reader refuses
  // a name written twice); else the archive's own index answers torch's lookups, and no second
  // map of every member is made.
  const dupes: Array<[ZipEntry, ZipEntry]> = [];
  let byFolded: Map<string, ZipEntry> | null = null;
  if (folds) {
    byFolded = new Map<string, ZipEntry>();
    for (const e of entries) {
      const k = foldedName(e);
      const seen = byFolded.get(k);
      if (seen) dupes.push([seen, e]);
      else byFolded.set(k, e);
    }
  }
  const find = (name: string): ZipEntry | undefined => (byFolded ? byFolded.get(name) : zip.get(name));
  const get = (record: string): ZipEntry | undefined => (prefix === null ? undefined : find(`${prefix}/${foldRecord(record)}`));
  const torch = get('data.pkl') !== undefined || get('constants.pkl') !== undefined;
  const findings: Finding[] = [];
  if (torch) {
    for (const [a, b] of dupes) {
      findings.push({ code: 'ZipDuplicateName', message: `members ${JSON.stringify(a.name)} and ${JSON.stringify(b.name)} are one name to torch, which compares names ignoring case: which one it reads is undefined`, offset: b.centralOffset, tensor: b.name });
    }
  }
  const constants = get('constants.pkl');
  if (constants || (torch && code)) {
    const marker = (constants ?? code)!.name;
    findings.push({ code: 'TorchUnsupportedArchive', message: `a TorchScript archive (${marker}): torch.load hands an archive with constants.pkl to torch.jit.load, which compiles and runs the code in it`, tensor: marker });
  }
  return { prefix, torch, findings, get, isStorage: (e) => torch && storage!.test(foldedName(e)) };
}
