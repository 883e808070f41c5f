import type { TensorportError } from '@tensorport/core';
import { describe, expect, it } from 'vitest';
import { runPickle, type PyValue } from '../src/index.ts';
import { findTensors } from '../src/torch/walk.ts';
import { binunicode, global, pk, PROTO2, u32 } from './helpers/pickle-bytes.ts';
import { refusal } from './helpers/refusal.ts';

const load = (bytes: Uint8Array, limits = {}): PyValue => runPickle(bytes, 0, { mode: 'load', limits }).value!;

const refused = (bytes: Uint8Array, limits = {}): TensorportError => refusal(() => runPickle(bytes, 0, { mode: 'load', limits }));

describe('integers', () => {
  it('reads LONG1 as signed two\'s complement', () => {
    expect(load(pk(PROTO2, 0x8a, 1, 0xff, '.'))).toBe(-1);
    expect(load(pk(PROTO2, 0x8a, 2, 0x00, 0x80, '.'))).toBe(-32768);
    expect(load(pk(PROTO2, 0x8a, 1, 0x7f, '.'))).toBe(127);
    expect(load(pk(PROTO2, 0x8a, 0, '.'))).toBe(0);
  });
  it('keeps integers beyond 2^53 exact as bigint', () => {
    // 2^70 needs 9 bytes (pickleparser throws "Value too large")
    expect(load(pk(PROTO2, 0x8a, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0x40, '.'))).toBe(1n << 70n);
    expect(load(pk(PROTO2, 0x8a, 8, 0, 0, 0, 0, 0, 0, 0, 0x80, '.'))).toBe(-(1n << 63n));
  });
  it('reads BININT signed and BININT1/2 unsigned', () => {
    expect(load(pk(PROTO2, 0x4a, ...u32(0xffffffff), '.'))).toBe(-1);
    expect(load(pk(PROTO2, 0x4b, 0xff, '.'))).toBe(255);
    expect(load(pk(PROTO2, 0x4d, 0xff, 0xff, '.'))).toBe(65535);
  });
  it('reads protocol 0 INT, LONG and FLOAT text, and INT 01/00 as bools', () => {
    expect(load(pk('I-42\n.'))).toBe(-42);
    expect(load(pk('I01\n.'))).toBe(true);
    expect(load(pk('I00\n.'))).toBe(false);
    expect(load(pk('L123456789012345678901234567890L\n.'))).toBe(123456789012345678901234567890n);
    expect(load(pk('F-1.5e3\n.'))).toEqual({ kind: 'float', value: -1500 });
  });
  it('decodes a 1 KiB LONG4 and refuses a longer one before reading it', () => {
    const body = new Array<number>(1024).fill(0);
    body[1023] = 0x01;
    expect(load(pk(PROTO2, 0x8b, ...u32(1024), body, '.'))).toBe(1n << BigInt(1023 * 8));
    const e = refused(pk(PROTO2, 0x8b, ...u32(1025), new Array<number>(1025).fill(0), '.'));
    expect(e.code).toBe('PickleLimitExceeded');
  });
  it('refuses a 2 GiB LONG4 length on a tiny input at once', () => {
    expect(refused(pk(PROTO2, 0x8b, 0xff, 0xff, 0xff, 0x7f, 1, 2, '.'), { maxIntBytes: 2 ** 31 }).code).toBe('PickleInvalid');
    expect(refused(pk(PROTO2, 0x8b, 0xff, 0xff, 0xff, 0xff, '.')).code).toBe('PickleInvalid'); // negative length
  });
});

describe('strings and bytes', () => {
  it('decodes the text opcodes of every protocol', () => {
    expect(load(pk(PROTO2, binunicode('héllo'), '.'))).toBe('héllo');
    expect(load(pk(0x80, 4, 0x8c, 2, 'ab', '.'))).toBe('ab');
    expect(load(pk(PROTO2, 0x55, 3, 'abc', '.'))).toBe('abc');
    expect(load(pk("S'a\\x41\\n\\'b'\n."))).toBe("aA\n'b");
    expect(load(pk('Vcaf\\u00e9 \\U0001F600\n.'))).toBe('café 😀');
    expect(load(pk(0x80, 3, 0x43, 2, 0x00, 0xff, '.'))).toEqual({ kind: 'bytes', data: Uint8Array.from([0, 255]) });
  });
  it('checks every length against the bytes left before allocating', () => {
    for (const op of [pk(PROTO2, 0x58, ...u32(0xfffffff0), 'x'), pk(0x80, 4, 0x8d, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 'x'), pk(0x80, 3, 0x42, ...u32(100), 'x')]) {
      const e = refused(op);
      expect(e.code).toBe('PickleInvalid');
      expect(e.message).toMatch(/truncated/);
    }
  });
  it('refuses invalid UTF-8 instead of replacing it', () => {
    expect(refused(pk(PROTO2, 0x58, ...u32(2), 0xc3, 0x28, '.')).code).toBe('PickleInvalid');
  });
});

describe('containers and the memo', () => {
  it('keeps __proto__ and constructor as plain dict keys', () => {
    const v = load(pk(PROTO2, '}', '(', binunicode('__proto__'), '}', binunicode('polluted'), 0x88, 's', binunicode('constructor'), 0x4b, 1, 'u', '.'));
    expect(v).toMatchObject({ kind: 'dict' });
    const d = v as { items: Map<PyValue, PyValue> };
    expect([...d.items.keys()]).toEqual(['__proto__', 'constructor']);
    expect(Object.getPrototypeOf(d.items)).toBe(Map.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
  it('tells tuples from lists, and builds DICT/LIST/TUPLE from a MARK', () => {
    const v = load(pk('(I1\nI2\nt(I3\nl(S\'k\'\nI4\nd\x87.'));
    expect(v).toMatchObject({ kind: 'tuple', items: [{ kind: 'tuple', items: [1, 2] }, { kind: 'list', items: [3] }, { kind: 'dict' }] });
  });
  it('shares memoised values instead of copying them', () => {
    const v = load(pk(PROTO2, ']', 'q', 0, '0', 'h', 0, 'h', 0, 0x86, '.')) as { items: PyValue[] };
    expect(v.items[0]).toBe(v.items[1]);
  });
  it('stores LONG_BINPUT 0xFFFFFFFF in a map, not an array of 4 billion slots', () => {
    expect(load(pk(PROTO2, 'N', 'r', ...u32(0xffffffff), '0', 'j', ...u32(0xffffffff), '.'))).toBeNull();
  });
  it('counts memo keys exactly as Python does, dense or not (MEMOIZE uses len(memo))', () => {
    // memo[2] = 'c'; memo[0] = 'a'; memo[1] = 'b'; memo[2] = 'C'  ->  len 3, so MEMOIZE stores at 3
    const v = load(pk(0x80, 4, 0x8c, 1, 'c', 'q', 2, '0', 0x8c, 1, 'a', 'q', 0, '0', 0x8c, 1, 'b', 'q', 1, '0', 0x8c, 1, 'C', 'q', 2, '0',
      0x8c, 1, 'd', 0x94, '0', 'h', 3, 'h', 2, 'h', 0, 0x87, '.'));
    expect(v).toMatchObject({ kind: 'tuple', items: ['d', 'C', 'a'] });
    // memo[5] = 'x' alone: len 1, so MEMOIZE stores at 1
    expect(load(pk(0x80, 4, 0x8c, 1, 'x', 'q', 5, 0x94, '0', 'h', 1, 'h', 5, 0x86, '.'))).toMatchObject({ kind: 'tuple', items: ['x', 'x'] });
  });
  it('refuses a memo key that was never stored', () => {
    const e = refused(pk(PROTO2, 'N', 'q', 1, '0', 'h', 3, '.'));
    expect(e.code).toBe('PickleInvalid');
    expect(e.message).toMatch(/memo key 3/);
  });
  it('refuses stack underflow, a missing MARK and leftovers at STOP', () => {
    expect(refused(pk(PROTO2, '.')).message).toMatch(/underflow/);
    expect(refused(pk(PROTO2, ']', 'N', 'e', '.')).message).toMatch(/without MARK/);
    expect(refused(pk(PROTO2, 'N', 'N', '.')).message).toMatch(/left on the stack/);
    expect(refused(pk(PROTO2, '(', 'R', '.')).message).toMatch(/underflow/); // REDUCE cannot pop below a MARK
    expect(refused(pk(PROTO2, 'N', 'a', '.')).message).toMatch(/underflow/);
  });
  it('refuses APPEND to a tuple and SETITEM on a list', () => {
    expect(refused(pk(PROTO2, ')', 'N', 'a', '.')).message).toMatch(/APPEND on tuple/);
    expect(refused(pk(PROTO2, ']', 'N', 'N', 's', '.')).message).toMatch(/SETITEM on list/);
  });
  it('stops 100 000-deep nesting with a typed error, not a stack overflow', () => {
    const depth = 100_000;
    const e = refused(pk(PROTO2, new Array<number>(depth).fill(0x5d), new Array<number>(depth - 1).fill(0x61), '.'));
    expect(e.code).toBe('PickleLimitExceeded');
    expect(e.message).toMatch(/nesting depth/);
  });
  it('stops deep nesting built through the memo with a small stack', () => {
    // l0 = []; repeat: l_{i+1} = []; l_{i+1}.append(l_i) with l_i fetched from the memo
    const parts: number[] = [...PROTO2, 0x5d, 0x71, 0, 0x30];
    for (let i = 0; i < 2000; i++) parts.push(0x5d, 0x68, 0, 0x61, 0x71, 0, 0x30);
    parts.push(0x68, 0, 0x2e);
    expect(refused(Uint8Array.from(parts)).code).toBe('PickleLimitExceeded');
  });
  it('bounds the stack, the MARK depth, container sizes, the memo and the total work', () => {
    expect(refused(pk(PROTO2, new Array<number>(100).fill(0x4e), '.'), { maxStack: 50 }).message).toMatch(/stack depth/);
    expect(refused(pk(PROTO2, new Array<number>(100).fill(0x28), '.'), { maxMarks: 50 }).message).toMatch(/MARK depth/);
    expect(refused(pk(PROTO2, ']', '(', new Array<number>(100).fill(0x4e), 'e', '.'), { maxItems: 50 }).message).toMatch(/container size/);
    // entries that some GET reads are stored, and counted; the others are never stored (memo-reads.ts)
    const puts: number[] = [];
    const gets: number[] = [];
    for (let i = 0; i < 100; i++) puts.push(0x71, i);
    for (let i = 0; i < 100; i++) gets.push(0x68, i, 0x30);
    expect(refused(pk(PROTO2, 'N', puts, gets, '.'), { maxMemo: 50 }).message).toMatch(/memo entries/);
    expect(runPickle(pk(PROTO2, 'N', puts, '.'), 0, { mode: 'load', limits: { maxMemo: 50 } }).value).toBe(null);
    expect(refused(pk(PROTO2, new Array<number>(100).fill(0x4e), '.'), { maxWork: 50 }).message).toMatch(/work/);
  });
  it('handles a 300 000-item argument tuple without spreading it', () => {
    const e = refused(pk(PROTO2, global('collections', 'OrderedDict'), '(', new Array<number>(300_000).fill(0x4e), 't', 'R', '.'));
    expect(e.code).toBe('PickleInvalid');
    expect(e.message).toMatch(/collections\.OrderedDict: takes 0 to 1 arguments, got 300000/);
  });
});

describe('a billion laughs stays a small DAG', () => {
  // {l0: 'lol', l1: [l0]*10, ..., l9: [l8]*10}: 10^9 leaves if expanded, ~600 bytes as a pickle
  const parts: number[] = [...PROTO2, 0x7d, 0x28, ...binunicode('l0'), ...binunicode('lol'), 0x71, 0];
  for (let i = 1; i < 10; i++) {
    parts.push(...binunicode(`l${i}`), 0x5d, 0x28, ...new Array<number>(10).fill(0).flatMap(() => [0x68, i - 1]), 0x65, 0x71, i);
  }
  parts.push(0x75, 0x2e);
  const bytes = Uint8Array.from(parts);

  it('loads in bounded memory and the walk visits each container once', () => {
    expect(bytes.byteLength).toBeLessThan(700);
    const v = load(bytes);
    const walk = findTensors(v);
    expect(walk.tensors).toEqual([]);
    // 'l0' plus the 10 strings of l1; l2..l9 hold only already-visited lists
    expect(walk.dropped.length).toBe(11);
  });
  it('walks a cycle once', () => {
    const cyclic = load(pk(PROTO2, ']', 'q', 0, 'h', 0, 'a', '.'));
    expect(findTensors(cyclic).dropped).toEqual([]);
  });
  it('names tensors by path in order, and refuses two paths that give one name', () => {
    const t = (): PyValue => ({ kind: 'tensor', storage: { kind: 'storage', key: '0', dtype: 'float32', location: 'cpu', numel: 1, view: null }, dtype: 'float32', offset: 0, shape: [1], stride: [1], parameter: false }) as PyValue;
    const dict = (...items: Array<[PyValue, PyValue]>): PyValue => ({ kind: 'dict', items: new Map(items), depth: 1, attrs: null }) as PyValue;
    const list = (...items: PyValue[]): PyValue => ({ kind: 'list', items, depth: 1 }) as PyValue;
    const names = (v: PyValue) => findTensors(v).tensors.map((f) => f.name);
    expect(names(dict(['b', t()], ['a', dict(['c', t()], ['d', list(t(), t())])], ['e', t()]))).toEqual(['b', 'a.c', 'a.d.0', 'a.d.1', 'e']);
    expect(names(list(t(), dict(['x', t()])))).toEqual(['0', '1.x']);
    const code = (v: PyValue) => {
      try {
        findTensors(v);
        return null;
      } catch (e) {
        return (e as TensorportError).code;
      }
    };
    // a root key with a dot against a nested path, in both orders; a number key against a string one
    expect(code(dict(['a.b', t()], ['a', dict(['b', t()])]))).toBe('DuplicateTensorName');
    expect(code(dict(['a', dict(['b', t()])], ['a.b', t()]))).toBe('DuplicateTensorName');
    expect(code(dict(['1', t()], [1, t()]))).toBe('DuplicateTensorName');
    expect(code(dict([1, t()], ['1', t()]))).toBe('DuplicateTensorName');
    expect(code(list(dict(['0', t()]), t()))).toBe(null);
    expect(code(dict(['0', list(t())], ['0.0', t()]))).toBe('DuplicateTensorName');
  });
});

describe('opcodes', () => {
  it('refuses unknown opcodes and the copyreg extension registry', () => {
    expect(refused(pk(PROTO2, 0xff, '.')).code).toBe('PickleUnsupportedOpcode');
    expect(refused(pk(PROTO2, 0x82, 1, '.')).code).toBe('PickleUnsupportedOpcode');
    expect(refused(pk(0x80, 5, 0x97, '.')).code).toBe('PickleUnsupportedOpcode');
  });
  it('refuses a protocol above 5', () => {
    expect(refused(pk(0x80, 6, 'N.')).message).toMatch(/protocol 6/);
  });
  it('refuses STACK_GLOBAL with non-str operands', () => {
    const e = refused(pk(0x80, 4, 'K', 1, 0x8c, 4, 'eval', 0x93, 'N.'));
    expect(e.code).toBe('PickleInvalid');
    expect(e.message).toMatch(/STACK_GLOBAL with int and str/);
  });
  it('refuses persistent ids when no storage table is given', () => {
    expect(refused(pk(PROTO2, 'N', 'Q', '.')).message).toMatch(/persistent ids are not allowed/);
  });
  it('reads FRAME, MEMOIZE and SHORT_BINUNICODE (protocol 4)', () => {
    const v = load(pk(0x80, 4, 0x95, 8, 0, 0, 0, 0, 0, 0, 0, 0x8c, 1, 'a', 0x94, 'h', 0, 0x86, '.'));
    expect(v).toMatchObject({ kind: 'tuple', items: ['a', 'a'] });
  });
});

describe('allowed values stay inert', () => {
  it('refuses items, appends, calls and BUILD on an allowed value object (builtins.complex)', () => {
    const c = pk(PROTO2, global('builtins', 'complex'), 'K', 1, 'K', 2, 0x86, 'R');
    expect(refusal(() => runPickle(pk(c, 'N', 'N', 's', '.'), 0, { mode: 'load' })).message).toMatch(/SETITEM on builtins\.complex/);
    expect(refusal(() => runPickle(pk(c, 'N', 'a', '.'), 0, { mode: 'load' })).message).toMatch(/APPEND on builtins\.complex/);
    expect(refusal(() => runPickle(pk(c, ')', 'R', '.'), 0, { mode: 'load' })).message).toMatch(/not callable/);
    expect(refusal(() => runPickle(pk(c, '}', 'b', '.'), 0, { mode: 'load' })).message).toMatch(/BUILD on builtins\.complex/);
    expect(runPickle(pk(c, '.'), 0, { mode: 'load' }).value).toMatchObject({ kind: 'object', callable: 'builtins.complex', args: [1, 2] });
  });
});
