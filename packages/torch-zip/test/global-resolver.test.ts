import { describe, expect, it } from 'vitest';
import { runPickle } from '../src/pickle/interpreter.ts';
import { lookupGlobal } from '../src/torch/allowlist.ts';

// PROTO 2, GLOBAL collections OrderedDict, EMPTY_TUPLE, REDUCE, STOP: what every state dict starts with.
const ORDERED_DICT = new Uint8Array([0x80, 0x02, ...new TextEncoder().encode('ccollections\nOrderedDict\n'), 0x29, 0x52, 0x2e]);

describe('the pickle machine knows no names: its allowlist is the resolver it is given', () => {
  it('defaults to torch’s weights-only allowlist', () => {
    expect(lookupGlobal('collections.OrderedDict')).toBeDefined();
    const r = runPickle(ORDERED_DICT, 0, { mode: 'load' });
    expect(r.globals).toEqual(['collections.OrderedDict']);
  });

  it('refuses a name its resolver does not know, and lists it in scan mode', () => {
    const seen: string[] = [];
    const none = (q: string) => {
      seen.push(q);
      return undefined;
    };
    expect(() => runPickle(ORDERED_DICT, 0, { mode: 'load', resolveGlobal: none })).toThrow(expect.objectContaining({ code: 'PickleDisallowedGlobal' }));
    expect(seen).toEqual(['collections.OrderedDict']);
    const scanned = runPickle(ORDERED_DICT, 0, { mode: 'scan', resolveGlobal: none });
    expect(scanned.findings.map((f) => f.code)).toContain('PickleDisallowedGlobal');
  });
});
