import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTensorportError } from '@tensorport/core';
import { PyTuple, parsePyLiteral } from '../src/index.ts';

describe('parsePyLiteral', () => {
  it('parses numpy header dicts, including structured descrs and Python 2 longs', () => {
    const v = parsePyLiteral("{'descr': [('x', '<f4'), ('y', '>i2', (2,))], 'fortran_order': False, 'shape': (3L, 4), }");
    expect(v).toBeInstanceOf(Map);
    const m = v as Map<string, unknown>;
    expect(m.get('fortran_order')).toBe(false);
    expect((m.get('shape') as PyTuple).items).toEqual([3n, 4n]);
    const descr = m.get('descr') as PyTuple[];
    expect(descr[1]!.items).toEqual(['y', '>i2', new PyTuple([2n])]);
  });

  it('distinguishes (x) from (x,) and reads escapes in both quote styles', () => {
    expect(parsePyLiteral('(5)')).toBe(5n);
    expect((parsePyLiteral('(5,)') as PyTuple).items).toEqual([5n]);
    expect((parsePyLiteral('()') as PyTuple).items).toEqual([]);
    expect(parsePyLiteral(String.raw`"it's \"q\" \x41\u00e9\U0001F600\n"`)).toBe('it\'s "q" Aé😀\n');
    expect(parsePyLiteral('[None, True, -3]')).toEqual([null, true, -3n]);
  });

  const BAD = [
    '', '{', "{'a' 1}", "{'a': 1 'b': 2}", "{'a': 1, 'a': 2}", '{1: 2}', "'unterminated", '(1 2)', '01', '1.5', '1e3',
    'Truee', 'nan', "'\\q'", "'\\x4'", "'\\U00110000'", "{'a': 1} junk", '9'.repeat(41), '('.repeat(40) + ')'.repeat(40),
    "{'a': lambda: 1}", "__import__('os')",
  ];
  for (const text of BAD) {
    it(`refuses ${JSON.stringify(text.slice(0, 30))} with NpyInvalidHeader`, () => {
      expect(() => parsePyLiteral(text)).toThrow(expect.objectContaining({ code: 'NpyInvalidHeader' }));
    });
  }

  it('never throws anything but a TensorportError, on any text', () => {
    const alphabet = fc.constantFrom(...`{}()[]'",:\\ \nxuU0129-LTrueFalsNon_abc`.split(''));
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 200 }), fc.array(alphabet, { maxLength: 200 }).map((a) => a.join(''))), (s) => {
        try {
          parsePyLiteral(s);
        } catch (e) {
          if (!isTensorportError(e)) throw e;
        }
      }),
      { numRuns: 3000 },
    );
  });
});
