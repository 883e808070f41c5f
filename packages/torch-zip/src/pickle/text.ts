const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Strict UTF-8: two different byte strings must never decode to the same name. */
export function utf8(bytes: Uint8Array): string | undefined {
  try {
    return UTF8.decode(bytes);
  } catch {
    return undefined;
  }
}

function latin1(bytes: Uint8Array, from = 0, to = bytes.length): string {
  let s = '';
  for (let i = from; i < to; i += 8192) s += String.fromCharCode.apply(null, Array.from(bytes.subarray(i, Math.min(to, i + 8192))));
  return s;
}

const SIMPLE_ESCAPES: Readonly<Record<string, number>> = {
  '\\': 0x5c, "'": 0x27, '"': 0x22, a: 0x07, b: 0x08, f: 0x0c, n: 0x0a, r: 0x0d, t: 0x09, v: 0x0b,
};

/**
 * STRING's argument: a quoted Python 2 `repr` with backslash escapes (`codecs.escape_decode`).
 * Returns the bytes, or undefined when quoting or an escape is malformed.
 */
export function unescapeQuoted(line: Uint8Array): Uint8Array | undefined {
  const q = line[0];
  if (line.length < 2 || (q !== 0x27 && q !== 0x22) || line[line.length - 1] !== q) return undefined;
  const out: number[] = [];
  const s = latin1(line, 1, line.length - 1);
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c !== '\\') { out.push(s.charCodeAt(i)); continue; }
    const e = s[++i];
    if (e === undefined) return undefined;
    if (e in SIMPLE_ESCAPES) out.push(SIMPLE_ESCAPES[e]!);
    else if (e === '\n') continue;
    else if (e === 'x') {
      const h = s.slice(i + 1, i + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(h)) return undefined;
      out.push(parseInt(h, 16));
      i += 2;
    } else if (/[0-7]/.test(e)) {
      const m = /^[0-7]{1,3}/.exec(s.slice(i, i + 3))![0];
      out.push(parseInt(m, 8) & 0xff);
      i += m.length - 1;
    } else out.push(0x5c, s.charCodeAt(i));
  }
  return Uint8Array.from(out);
}

/**
 * UNICODE's argument (`raw-unicode-escape`): latin1 text where only \uXXXX and \UXXXXXXXX are
 * escapes, and only after an odd run of backslashes (CPython keeps `\\u0041` as written).
 */
export function rawUnicodeEscape(line: Uint8Array): string | undefined {
  const s = latin1(line);
  let out = '';
  for (let i = 0; i < s.length; ) {
    if (s[i] !== '\\') { out += s[i++]; continue; }
    let run = 0;
    while (s[i] === '\\') { run++; i++; }
    const e = s[i];
    if (run % 2 === 0 || (e !== 'u' && e !== 'U')) { out += '\\'.repeat(run); continue; }
    out += '\\'.repeat(run - 1);
    const len = e === 'u' ? 4 : 8;
    const h = s.slice(i + 1, i + 1 + len);
    if (h.length !== len || !/^[0-9a-fA-F]+$/.test(h)) return undefined;
    const cp = parseInt(h, 16);
    if (cp > 0x10ffff) return undefined;
    out += String.fromCodePoint(cp);
    i += 1 + len;
  }
  return out;
}
