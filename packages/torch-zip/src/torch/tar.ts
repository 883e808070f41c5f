/**
 * torch's pre-0.4 checkpoints are tar archives, and `torch.load` tries its tar loader first on
 * every file that is not a ZIP (`_legacy_load`: `tarfile.open(fileobj=f, mode='r:')`), falling back
 * to the legacy pickle stream only on a TarError. Python's tarfile takes the first 512 bytes as a
 * header when its checksum field matches the byte sum: no `ustar` magic needed (v7 headers have
 * none). So a legacy stream whose first block passes that check is read as a tar by torch, and the
 * tar's `storages`, `tensors` and `pickle` members are unpickled instead of what we read.
 */
const BLOCK = 512;

/** Python's `nti`: octal text up to the first NUL (spaces, sign, `0o` and underscores allowed), or base-256. */
function numericField(b: Uint8Array): number | null {
  if (b[0] === 0x80 || b[0] === 0xff) {
    let n = 0;
    for (let i = 1; i < b.byteLength; i++) n = n * 256 + b[i]!;
    return b[0] === 0xff ? -n : n;
  }
  const nul = b.indexOf(0);
  let s = '';
  for (const c of nul < 0 ? b : b.subarray(0, nul)) {
    if (c >= 0x80) return null;
    s += String.fromCharCode(c);
  }
  // int(s.strip() or "0", 8): lenient about what surrounds the digits, as Python is
  const m = /^[\s]*([+-]?)(?:0[oO])?_?([0-7](?:_?[0-7])*)?[\s]*$/.exec(s);
  if (!m) return null;
  const digits = (m[2] ?? '0').replace(/_/g, '');
  const v = parseInt(digits, 8);
  return m[1] === '-' ? -v : v;
}

/** Whether tarfile would accept `block` (the file's first 512 bytes) as a tar header. */
export function isTarHeader(block: Uint8Array): boolean {
  if (block.byteLength < BLOCK || block.subarray(0, BLOCK).every((b) => b === 0)) return false;
  const want = numericField(block.subarray(148, 156));
  if (want === null) return false;
  let unsigned = 8 * 0x20;
  let signed = 8 * 0x20;
  for (let i = 0; i < BLOCK; i++) {
    if (i >= 148 && i < 156) continue;
    unsigned += block[i]!;
    signed += block[i]! >= 0x80 ? block[i]! - 256 : block[i]!;
  }
  return want === unsigned || want === signed;
}

export interface TarMember {
  readonly name: string;
  /** Where the member's data starts, and its size. */
  readonly offset: number;
  readonly size: number;
}

/** The members of a tar image, header by header, until a block that is not a header (at most `max`). */
export function tarMembers(bytes: Uint8Array, max = 1000): TarMember[] {
  const out: TarMember[] = [];
  let at = 0;
  while (at + BLOCK <= bytes.byteLength && out.length < max) {
    const h = bytes.subarray(at, at + BLOCK);
    if (!isTarHeader(h)) break;
    const size = numericField(h.subarray(124, 136));
    if (size === null || size < 0) break;
    const nul = h.subarray(0, 100).indexOf(0);
    const name = new TextDecoder('latin1').decode(h.subarray(0, nul < 0 ? 100 : nul));
    out.push({ name, offset: at + BLOCK, size });
    at += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
  }
  return out;
}
