/** Hand-assembled pickles for tests: numbers are bytes, strings are latin1 text. */
export function pk(...parts: Array<number | string | Uint8Array | number[]>): Uint8Array {
  const out: number[] = [];
  for (const p of parts) {
    if (typeof p === 'number') out.push(p);
    else if (typeof p === 'string') for (let i = 0; i < p.length; i++) out.push(p.charCodeAt(i) & 0xff);
    else for (const b of p) out.push(b);
  }
  return Uint8Array.from(out);
}

export const u32 = (n: number): number[] => [n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, (n >>> 24) & 0xff];

/** BINUNICODE of a JS string (UTF-8). */
export function binunicode(s: string): number[] {
  const b = new TextEncoder().encode(s);
  return [0x58, ...u32(b.length), ...b];
}

/** `GLOBAL 'module name'`. */
export const global = (module: string, name: string): string => `c${module}\n${name}\n`;

export const PROTO2 = [0x80, 0x02];
export const STOP = '.';
