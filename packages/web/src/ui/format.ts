/** Display formats. Sizes use SI units (1 KB = 1000 bytes), as disk vendors and `ls -h --si` do. */

const UNITS = ['B', 'KB', 'MB', 'GB', 'TB', 'PB', 'EB'];

export function formatBytes(n: number): string {
  if (n < 1000) return `${n} B`;
  let i = 0;
  let v = n;
  while (v >= 999.5 && i < UNITS.length - 1) {
    v /= 1000;
    i++;
  }
  return `${threeDigits(v)} ${UNITS[i]}`;
}

/** 3 significant digits, no trailing zeros: 1.5, 12.3, 100. */
function threeDigits(v: number): string {
  return String(Number(v.toFixed(v >= 100 ? 0 : v >= 10 ? 1 : 2)));
}

const grouped = new Intl.NumberFormat('en-US');

export function formatCount(n: number): string {
  return grouped.format(n);
}

/** 6 738 415 616 → "6.74 B"; below a million, the exact number. */
export function formatCompact(n: number): string {
  if (n < 1e6) return grouped.format(n);
  const [d, u] = n >= 1e12 ? [1e12, 'T'] : n >= 1e9 ? [1e9, 'B'] : [1e6, 'M'];
  return `${threeDigits(n / d)} ${u}`;
}

export function formatShape(shape: readonly number[]): string {
  return `[${shape.join(', ')}]`;
}

export function formatMs(ms: number): string {
  return ms < 10 ? `${ms.toFixed(1)} ms` : ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;
}
