/**
 * JSON text as Python's `json.dump(obj, f, indent=4)` writes it (mlx-lm's config.json and
 * index): 4-space indent, `", "`-free item separators with newlines, `": "` after keys, every
 * character outside ' '..'~' escaped (`ensure_ascii`), floats in `repr` form (1e-06, not 0.000001).
 * A JS number cannot tell 10000.0 from 10000: integral values are written as integers.
 */

const SHORT: Record<string, string> = { '"': '\\"', '\\': '\\\\', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

export function pyString(s: string): string {
  return `"${s.replace(/[^ -~]|["\\]/g, (c) => SHORT[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)}"`;
}

/** Python's float repr: shortest round-trip digits, exponent form below 1e-4 and from 1e16. */
export function pyFloat(x: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (!Number.isFinite(x)) return x > 0 ? 'Infinity' : '-Infinity';
  const [mant, expText] = x.toExponential().split('e') as [string, string];
  const exp = Number(expText);
  const neg = mant.startsWith('-');
  const digits = mant.replace('-', '').replace('.', '');
  let body: string;
  if (exp < -4 || exp >= 16) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    body = `${m}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  } else if (exp < 0) {
    body = `0.${'0'.repeat(-exp - 1)}${digits}`;
  } else if (digits.length > exp + 1) {
    body = `${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`;
  } else {
    body = `${digits}${'0'.repeat(exp + 1 - digits.length)}.0`;
  }
  return neg ? `-${body}` : body;
}

export function pythonJson(value: unknown, level = 0): string {
  const pad = '    '.repeat(level + 1);
  const end = '    '.repeat(level);
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') return Number.isInteger(value) && Math.abs(value) < 1e16 ? String(value) : pyFloat(value);
  if (typeof value === 'string') return pyString(value);
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    return `[\n${value.map((v) => pad + pythonJson(v, level + 1)).join(',\n')}\n${end}]`;
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    if (entries.length === 0) return '{}';
    return `{\n${entries.map(([k, v]) => `${pad}${pyString(k)}: ${pythonJson(v, level + 1)}`).join(',\n')}\n${end}}`;
  }
  throw new TypeError(`cannot write ${typeof value} as JSON`);
}
