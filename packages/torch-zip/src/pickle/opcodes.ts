/** PROTO n: protocol 2+ pickles open with it (what torch.save writes outside a ZIP), protocols 0 and 1 may. */
export const PROTO = 0x80;

/** Whether bytes open with a PROTO opcode of a protocol the interpreter reads (0–5): a pickle's magic, as far as it has one. */
export function startsWithProto(head: Uint8Array): boolean {
  return head[0] === PROTO && head[1] !== undefined && head[1] <= 5;
}

/** Pickle opcodes of protocols 0–5 (CPython's Lib/pickle.py names), byte → name. */
export const OPCODE_NAMES: Readonly<Record<number, string>> = {
  0x28: 'MARK', 0x29: 'EMPTY_TUPLE', 0x2e: 'STOP', 0x30: 'POP', 0x31: 'POP_MARK', 0x32: 'DUP',
  0x42: 'BINBYTES', 0x43: 'SHORT_BINBYTES', 0x46: 'FLOAT', 0x47: 'BINFLOAT', 0x49: 'INT', 0x4a: 'BININT',
  0x4b: 'BININT1', 0x4c: 'LONG', 0x4d: 'BININT2', 0x4e: 'NONE', 0x50: 'PERSID', 0x51: 'BINPERSID',
  0x52: 'REDUCE', 0x53: 'STRING', 0x54: 'BINSTRING', 0x55: 'SHORT_BINSTRING', 0x56: 'UNICODE',
  0x58: 'BINUNICODE', 0x5d: 'EMPTY_LIST', 0x61: 'APPEND', 0x62: 'BUILD', 0x63: 'GLOBAL', 0x64: 'DICT',
  0x65: 'APPENDS', 0x67: 'GET', 0x68: 'BINGET', 0x69: 'INST', 0x6a: 'LONG_BINGET', 0x6c: 'LIST',
  0x6f: 'OBJ', 0x70: 'PUT', 0x71: 'BINPUT', 0x72: 'LONG_BINPUT', 0x73: 'SETITEM', 0x74: 'TUPLE',
  0x75: 'SETITEMS', 0x7d: 'EMPTY_DICT', 0x80: 'PROTO', 0x81: 'NEWOBJ', 0x82: 'EXT1', 0x83: 'EXT2',
  0x84: 'EXT4', 0x85: 'TUPLE1', 0x86: 'TUPLE2', 0x87: 'TUPLE3', 0x88: 'NEWTRUE', 0x89: 'NEWFALSE',
  0x8a: 'LONG1', 0x8b: 'LONG4', 0x8c: 'SHORT_BINUNICODE', 0x8d: 'BINUNICODE8', 0x8e: 'BINBYTES8',
  0x8f: 'EMPTY_SET', 0x90: 'ADDITEMS', 0x91: 'FROZENSET', 0x92: 'NEWOBJ_EX', 0x93: 'STACK_GLOBAL',
  0x94: 'MEMOIZE', 0x95: 'FRAME', 0x96: 'BYTEARRAY8', 0x97: 'NEXT_BUFFER', 0x98: 'READONLY_BUFFER',
};

/**
 * What follows each opcode, by byte (pickletools' argument descriptors, reduced to their lengths):
 * nothing, a fixed number of bytes, a 1/4/8-byte little-endian length and that many bytes, one
 * newline-terminated line or two. What a walk needs to step over arguments without running
 * anything (memo-reads.ts); the interpreter decodes each argument itself. Same opcodes as
 * OPCODE_NAMES (a test holds them equal).
 */
export type OpcodeArg = 'none' | 'stop' | 1 | 2 | 4 | 8 | 'len1' | 'len4' | 'len8' | 'line' | 'lines2';

export const OPCODE_ARGS: Readonly<Record<number, OpcodeArg>> = {
  0x28: 'none', 0x29: 'none', 0x2e: 'stop', 0x30: 'none', 0x31: 'none', 0x32: 'none',
  0x42: 'len4', 0x43: 'len1', 0x46: 'line', 0x47: 8, 0x49: 'line', 0x4a: 4, 0x4b: 1, 0x4c: 'line', 0x4d: 2, 0x4e: 'none',
  0x50: 'line', 0x51: 'none', 0x52: 'none', 0x53: 'line', 0x54: 'len4', 0x55: 'len1', 0x56: 'line', 0x58: 'len4',
  0x5d: 'none', 0x61: 'none', 0x62: 'none', 0x63: 'lines2', 0x64: 'none', 0x65: 'none', 0x67: 'line', 0x68: 1,
  0x69: 'lines2', 0x6a: 4, 0x6c: 'none', 0x6f: 'none', 0x70: 'line', 0x71: 1, 0x72: 4, 0x73: 'none', 0x74: 'none',
  0x75: 'none', 0x7d: 'none', 0x80: 1, 0x81: 'none', 0x82: 1, 0x83: 2, 0x84: 4, 0x85: 'none', 0x86: 'none', 0x87: 'none',
  0x88: 'none', 0x89: 'none', 0x8a: 'len1', 0x8b: 'len4', 0x8c: 'len1', 0x8d: 'len8', 0x8e: 'len8', 0x8f: 'none',
  0x90: 'none', 0x91: 'none', 0x92: 'none', 0x93: 'none', 0x94: 'none', 0x95: 8, 0x96: 'len8', 0x97: 'none', 0x98: 'none',
};

/**
 * The opcodes torch's `weights_only` unpickler accepts (torch/_weights_only_unpickler.py, current
 * main). A file using others loads here but not with `torch.load(weights_only=True)`; our writer
 * emits only these, minus BINFLOAT, which torch 1.13 lacks.
 */
export const WEIGHTS_ONLY_OPCODES: ReadonlySet<string> = new Set([
  'APPEND', 'APPENDS', 'BINFLOAT', 'BINGET', 'BININT', 'BININT1', 'BININT2', 'BINPERSID', 'BINPUT',
  'BINUNICODE', 'BUILD', 'EMPTY_DICT', 'EMPTY_LIST', 'EMPTY_SET', 'EMPTY_TUPLE', 'GLOBAL', 'LONG1',
  'LONG_BINGET', 'LONG_BINPUT', 'MARK', 'NEWFALSE', 'NEWOBJ', 'NEWTRUE', 'NONE', 'PROTO', 'REDUCE',
  'SETITEM', 'SETITEMS', 'SHORT_BINSTRING', 'STOP', 'TUPLE', 'TUPLE1', 'TUPLE2', 'TUPLE3',
]);
