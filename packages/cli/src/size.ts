/**
 * Sizes the way Hugging Face tools write them (`transformers`' `convert_file_size_to_int`):
 * decimal units are powers of 10 (`5GB` = 5·10^9), binary units powers of 2 (`5GiB` = 5·2^30),
 * a bare number is bytes. Unit letters are case-insensitive and a fraction is allowed when the
 * bytes are whole (`1.5GB`, not `1.5` or `1.0001KB`), except a decimal unit ending in a lowercase `b` (`5Gb`, `500mb`): transformers reads that as
 * bits (÷ 8), which is easy to type by accident, so it is refused rather than guessed.
 */
const UNITS: Readonly<Record<string, number>> = {
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
};

/** Parses `5GB`, `5GiB`, `500MB`, `1.5GB`, `1048576`; null when the text is not a size or not a whole number of bytes. */
export function parseSize(text: string): number | null {
  const bytes = exactBytes(text);
  return typeof bytes === 'number' ? bytes : null;
}

/** `1.5`, `0.5B`, `1.0001KB`: a size whose byte count has a fraction (refused, never rounded). */
export function isFractionalBytes(text: string): boolean {
  return exactBytes(text) === 'fraction';
}

/** The byte count in exact decimal arithmetic (`1.1KB` is 1100, where 1.1 * 1000 in floats is not). */
function exactBytes(text: string): number | 'fraction' | null {
  const m = /^\s*(\d+)(?:\.(\d+))?\s*([a-z]*)\s*$/i.exec(text);
  if (!m) return null;
  if (isBitsUnit(m[3]!)) return null;
  const unit = UNITS[(m[3] || 'b').toLowerCase()];
  if (unit === undefined) return null;
  const fraction = m[2] ?? '';
  const scaled = BigInt(m[1]! + fraction) * BigInt(unit);
  const divisor = 10n ** BigInt(fraction.length);
  if (scaled % divisor !== 0n) return 'fraction';
  const bytes = scaled / divisor;
  return bytes <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(bytes) : null;
}

/** `Gb`, `mb`, `kb`, `b`: bits in transformers' parser. */
export function isBitsUnit(unit: string): boolean {
  return unit.endsWith('b') && !/ib$/i.test(unit);
}

/** `1536` → `1.5 KiB`: binary units, three significant digits, for tables and progress. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let value = bytes;
  let unit = 'B';
  for (const u of units) {
    if (value < 1024) break;
    value /= 1024;
    unit = u;
  }
  return `${value < 10 ? value.toFixed(2) : value < 100 ? value.toFixed(1) : value.toFixed(0)} ${unit}`;
}

/** `1234567` → `1,234,567`: parameter counts stay exact but readable. */
export function formatCount(n: number): string {
  // The same text as toLocaleString('en-US') for integers, without its first call's 20-45 ms of ICU set-up (issue 18).
  return Number.isSafeInteger(n) ? String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',') : n.toLocaleString('en-US');
}
