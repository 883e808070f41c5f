import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { JsonCursor, parseJson, SERDE_MAX_DEPTH, type JsonValue } from '../src/safetensors/json.ts';
import { TensorportError } from '../src/errors.ts';

function fails(text: string, opts = {}): TensorportError {
  try {
    parseJson(text, opts);
  } catch (e) {
    expect(e).toBeInstanceOf(TensorportError);
    return e as TensorportError;
  }
  throw new Error(`accepted: ${text}`);
}

/** Converts our tree to plain JS for comparison with JSON.parse (numbers as JS numbers). */
function plain(v: JsonValue): unknown {
  switch (v.kind) {
    case 'null': return null;
    case 'bool': return v.value;
    case 'string': return v.value;
    case 'number': return Number(v.text);
    case 'array': return v.items.map(plain);
    case 'object': {
      const o = new Map<string, unknown>();
      for (const e of v.entries) o.set(e.key, plain(e.value));
      return o;
    }
  }
}
function plainFromJs(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(plainFromJs);
  if (v !== null && typeof v === 'object') return new Map(Object.entries(v).map(([k, x]) => [k, plainFromJs(x)]));
  return v;
}

describe('parseJson: grammar', () => {
  it('parses the basic values with objects as ordered entry lists', () => {
    const v = parseJson(' {"b":1,"a":[true,false,null,"x"],"b":{"__proto__":2}} ');
    expect(v.kind).toBe('object');
    if (v.kind !== 'object') return;
    expect(v.entries.map((e) => e.key)).toEqual(['b', 'a', 'b']);
    const inner = v.entries[2]!.value;
    expect(inner.kind === 'object' && inner.entries[0]!.key).toBe('__proto__');
    expect(plain(v.entries[1]!.value)).toEqual([true, false, null, 'x']);
  });

  it('keeps integers exact up to u64::MAX and classifies everything else as non-u64', () => {
    const num = (t: string) => {
      const v = parseJson(t);
      if (v.kind !== 'number') throw new Error('not a number');
      return v.value;
    };
    expect(num('18446744073709551615')).toBe(18446744073709551615n);
    expect(num('9007199254740993')).toBe(9007199254740993n);
    expect(num('0')).toBe(0n);
    for (const t of ['18446744073709551616', '2.0', '1e1', '1E1', '-0', '-1', '0.0', '1e-400', '9'.repeat(25), '1.0e-0']) {
      expect(num(t), t).toBeNull();
    }
  });

  it.each([
    ['00'], ['01'], ['-01'], ['1.'], ['.5'], ['1e'], ['1e+'], ['-'], ['+1'], ['1.e5'], ['0x10'], ['NaN'], ['Infinity'],
    ['[1,]'], ['{"a":1,}'], ['{,}'], ['[,1]'], ['{"a" 1}'], ['{1:2}'], ["{'a':1}"], ['tru'], ['nul'], ['[1 2]'],
    [''], ['   '], ['{}{}'], ['{} x'], ['{}\u000b'], ['{}\u0000'], ['\ufeff{}'], ['{}\u000c'], ['\u00a0{}'],
    ['"\\x"'], ['"\\u12"'], ['"\\U0041"'], ['"\\ud83d"'], ['"\\ude00"'], ['"\\ud800\\u0041"'], ['"\\ud800\\ud800"'],
    ['"a\u0001"'], ['"a\nb"'], ['"\u001f"'], ['"abc'], ['[1'], ['{"a":'],
  ])('rejects %j', (t) => {
    const e = fails(t);
    expect(e.code).toBe('InvalidHeaderJson');
    expect(typeof e.offset).toBe('number');
  });

  it.each([['"\\/"'], ['"\\u00C4"'], ['"\\ud83d\\ude00"'], ['"\\uD83D\\uDE00"'], ['"\u007f"'], ['"\u2028"'], [' \t\n\r[] \r\n\t']])(
    'accepts %j',
    (t) => {
      expect(() => parseJson(t)).not.toThrow();
    },
  );

  it('decodes escapes', () => {
    const v = parseJson('"\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\\ud83d\\ude00\\u005f_"');
    expect(v.kind === 'string' && v.value).toBe('"\\/\b\f\n\r\tA\u{1f600}__');
  });
});

describe('parseJson: numbers serde_json refuses (number out of range)', () => {
  it.each([['1e400'], ['-1e400'], ['2e308'], ['1.7976931348623158e308'], ['1.7976931348623159e308'], ['1e99999999999999'], ['1' + '0'.repeat(400)], ['17976931348623157' + '0'.repeat(292)]])(
    'rejects %s',
    (t) => {
      expect(fails(t).message).toMatch(/out of range/);
    },
  );
  it.each([['1e-400'], ['-1e-999999999999999'], ['0e99999999999999'], ['1e308'], ['1.5e308'], ['1' + '0'.repeat(308)], ['0.000000000000000000000000000001e330'], ['-0'], ['1.7976931348623157e308'], ['-1.7976931348623157e308'], ['17976931348623157e292']])(
    'accepts %s',
    (t) => {
      expect(parseJson(t).kind).toBe('number');
    },
  );
});

describe('parseJson: depth', () => {
  it(`allows ${SERDE_MAX_DEPTH} nested containers and refuses one more`, () => {
    const ok = '['.repeat(SERDE_MAX_DEPTH) + ']'.repeat(SERDE_MAX_DEPTH);
    expect(() => parseJson(ok)).not.toThrow();
    const bad = '['.repeat(SERDE_MAX_DEPTH + 1) + ']'.repeat(SERDE_MAX_DEPTH + 1);
    expect(fails(bad).message).toMatch(/recursion limit/);
    const objs = '{"a":'.repeat(SERDE_MAX_DEPTH + 1) + '1' + '}'.repeat(SERDE_MAX_DEPTH + 1);
    expect(fails(objs).message).toMatch(/recursion limit/);
  });

  it('refuses 100k levels with a typed error (no stack overflow), in tree and skip mode', () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    expect(fails(deep).code).toBe('InvalidHeaderJson');
    const c = new JsonCursor(deep);
    expect(() => c.skipValue()).toThrow(TensorportError);
    // with no depth limit at all, the skipper is iterative
    const c2 = new JsonCursor(deep, { maxDepth: Infinity });
    c2.skipValue();
    c2.end();
  });
});

describe('parseJson: offsets are UTF-8 byte offsets', () => {
  it('counts multi-byte characters before the error', () => {
    // "é" is 2 bytes, "€" 3, "😀" 4 → the stray x is at byte 1+2+3+4+1+1 = 12
    const e = fails('"é€😀" x', { baseOffset: 8 });
    expect(e.offset).toBe(8 + 1 + 2 + 3 + 4 + 1 + 1);
    const v = parseJson('{"é":1,"b":2}');
    expect(v.kind === 'object' && v.entries[1]!.keyOffset).toBe(1 + 4 + 2 + 1);
  });
});

describe('parseJson: properties', () => {
  it('agrees with JSON.parse on valid JSON (values, order, duplicates aside)', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), (value) => {
        const text = JSON.stringify(value);
        if (text === undefined) return;
        // JSON.stringify only writes finite doubles; serde accepts every one of them
        expect(plain(parseJson(text))).toEqual(plainFromJs(JSON.parse(text)));
      }),
      { numRuns: 300 },
    );
  });

  it('reads the same strings from the UTF-8 bytes as from the text (names decoded afresh, not sliced)', () => {
    const enc = new TextEncoder();
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.string({ unit: 'binary', maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 30 })), { maxLength: 8 }), (pairs) => {
        const text = `{${pairs.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',')}}`;
        const read = (c: JsonCursor): string[] => {
          const out: string[] = [];
          c.enterObject();
          for (let k = c.nextKey(); k !== null; k = c.nextKey()) out.push(k, c.readString());
          return out;
        };
        const fromBytes = read(new JsonCursor(text, { utf8: enc.encode(text) }));
        expect(fromBytes).toEqual(read(new JsonCursor(text)));
        expect(fromBytes).toEqual(pairs.flat());
      }),
      { numRuns: 500 },
    );
    // a name that begins with U+FEFF keeps it (a decoder's BOM handling would drop it)
    const bom = `{"\ufeffmodel.layers.0.w":"\ufeff0123456789abcdef"}`;
    const c = new JsonCursor(bom, { utf8: enc.encode(bom) });
    c.enterObject();
    expect([c.nextKey(), c.readString()]).toEqual(['\ufeffmodel.layers.0.w', '\ufeff0123456789abcdef']);
  });

  it('throws only TensorportError on arbitrary and mutated input', () => {
    const seeds = ['{"a":{"dtype":"F32","shape":[1,2],"data_offsets":[0,8]}}', '[1,2.5e3,-0,"\\u00e9",{"x":null}]'];
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: 'grapheme', maxLength: 60 }),
          fc.tuple(fc.constantFrom(...seeds), fc.nat(), fc.string({ maxLength: 3 }), fc.nat({ max: 3 })).map(
            ([s, at, ins, del]) => s.slice(0, at % (s.length + 1)) + ins + s.slice((at % (s.length + 1)) + del),
          ),
        ),
        (text) => {
          try {
            parseJson(text);
          } catch (e) {
            expect(e).toBeInstanceOf(TensorportError);
            expect((e as TensorportError).code).toBe('InvalidHeaderJson');
          }
        },
      ),
      { numRuns: 2000 },
    );
  });
});
