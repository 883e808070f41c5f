import { TensorportError, type ErrorCode, type Finding } from '@tensorport/core';
import { lookupGlobal } from '../torch/allowlist.ts';
import { DEFAULT_LIMITS, type PickleLimits } from './limits.ts';
import { decodeLong, parseDecimal, parseFloatText } from './numbers.ts';
import { OPCODE_NAMES } from './opcodes.ts';
import { memoReads } from './memo-reads.ts';
import { importedName } from './py2-names.ts';
import { rawUnicodeEscape, unescapeQuoted, utf8 } from './text.ts';
import { depthAbove, depthOf, isContainer, typeName, type Fail, type GlobalResolver, type PyDict, type PyGlobal, type PyList, type PyObject, type PySet, type PyTuple, type PyValue } from './values.ts';

/**
 * A pickle stack machine that imports, calls and evaluates nothing. GLOBAL names are looked up in
 * the allowlist; REDUCE/NEWOBJ/BUILD on allowlisted names build inert records. Iterative, with every
 * resource bounded (see limits.ts), so hostile input ends in a TensorportError, never a crash or hang.
 *
 * Frames (protocol 4) are boundaries, as in CPython's C unpickler reading a file: every opcode and
 * argument lies wholly inside one frame or wholly outside all frames (see `need`), so the bytes
 * are read the same way whether Python unpickles them from memory or from a file.
 *
 * `load` mode refuses the first disallowed global. `scan` mode records it, carries on with an opaque
 * placeholder so every global in the file gets listed, and turns a fatal error into a finding.
 */
export interface RunOptions {
  mode: 'load' | 'scan';
  limits?: Partial<PickleLimits>;
  /**
   * What each global stands for: the allowlist. The machine itself knows no names; the default is
   * torch's weights-only allowlist (torch/allowlist.ts), which is what every caller here reads.
   */
  resolveGlobal?: GlobalResolver;
  /**
   * Extraction mode: BUILD on an unsupported (tensor-like) record is refused too. BUILD on a tensor
   * record is refused in every mode: torch's weights-only loader applies it with `set_`, which can
   * swap the storage, so dropping it would hand out other bytes than torch loads.
   */
  refuseTensorBuild?: boolean;
  /** Turns a persistent id into a value; without it, persistent ids are refused. */
  persistentLoad?: (pid: PyValue, fail: Fail) => PyValue;
  /** Where the pickle is (member name or file), for messages. */
  path?: string;
  /** Added to offsets in errors, for pickles inside a larger file. */
  baseOffset?: number;
  /**
   * The bytes are a window of a longer stream of this many bytes (from the same start): running out
   * of the window is reported as `truncated` so the caller can read more, unless the stream itself
   * is too short, which is an error at once (a 1 TB length costs nothing).
   */
  streamLength?: number;
  /** `streamLength` is a size limit, not the end of the data: running past it is PickleLimitExceeded. */
  streamCapped?: boolean;
  /** Store every PUT, as CPython does, not only those some GET reads (tests compare the two). */
  keepEveryPut?: boolean;
}

export interface RunResult {
  /** The value at STOP; undefined when a scan stopped early. */
  value: PyValue | undefined;
  /** Offset just after STOP (relative to the bytes given). */
  end: number;
  /** Every global referenced, `module.name`, in order of first appearance. */
  globals: string[];
  findings: Finding[];
  /** How often each opcode ran. */
  opcodes: Record<string, number>;
  truncated: boolean;
}

class Truncated {}

const OPAQUE_GLOBAL = (name: string): PyGlobal => ({ kind: 'global', name, entry: null });

export function runPickle(bytes: Uint8Array, start: number, opts: RunOptions): RunResult {
  const lim: PickleLimits = { ...DEFAULT_LIMITS, ...opts.limits };
  const scan = opts.mode === 'scan';
  const lookupEntry = opts.resolveGlobal ?? lookupGlobal;
  const base = opts.baseOffset ?? 0;
  const where = opts.path === undefined ? '' : `${opts.path}: `;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = bytes.length;

  const stack: PyValue[] = [];
  const marks: number[] = [];
  // The memo: keys are almost always 0, 1, 2, ... (an array is 4x faster than a Map at a million
  // entries); any other key (LONG_BINPUT 0xFFFFFFFF) goes to a Map. Each key lives in exactly one.
  const dense: PyValue[] = [];
  const sparse = new Map<number, PyValue>();
  const globals = new Set<string>();
  const reported = new Set<string>();
  const findings: Finding[] = [];
  const opcodes: Record<string, number> = Object.create(null) as Record<string, number>;
  let pos = start;
  let at = start;
  let op = '';
  let work = 0;
  // The protocol in effect (CPython's `self->proto`): Python 2 names are rewritten below 3.
  let proto = 0;
  // End of the current frame, or -1 outside frames. CPython reads a frame into a buffer of its
  // own; a read that does not fit the rest of that buffer is served from the file after the frame
  // (discarding the rest), except payloads of BINBYTES-like opcodes, which continue across, while
  // `pickle.loads` and the pure-Python unpickler read (or refuse) differently again. Such a stream
  // means different things to different loaders, so it is refused.
  let frameEnd = -1;

  const error = (code: ErrorCode, message: string): TensorportError =>
    new TensorportError(code, `${where}${message} (pickle offset ${base + at})`, { offset: base + at, ...(opts.path === undefined ? {} : { path: opts.path }) });
  const invalid = (message: string): never => { throw error('PickleInvalid', message); };
  const limit = (what: string, max: number): never => { throw error('PickleLimitExceeded', `${what} exceeds the limit of ${max}`); };
  const fail: Fail = (message) => invalid(`${op}: ${message}`);
  /** A finding in scan mode (once per message); the error itself in load mode. */
  const flag = (code: ErrorCode, message: string): void => {
    if (!scan) throw error(code, message);
    if (reported.has(message)) return;
    reported.add(message);
    findings.push({ code, message, offset: base + at, ...(opts.path === undefined ? {} : { path: opts.path }) });
  };

  const streamEnd = Math.max(opts.streamLength ?? end, end);
  // With the whole pickle at hand, a PUT is stored only if some GET reads its key (memo-reads.ts).
  const read = streamEnd === end && !opts.keepEveryPut ? memoReads(bytes, start) : null;
  /** Outside frames once the current one is used up; a read that crosses its end is refused. */
  const framed = (n: number): void => {
    if (frameEnd < 0) return;
    if (pos === frameEnd) frameEnd = -1;
    else if (n > frameEnd - pos) invalid(`${op} at ${base + pos} needs ${n} bytes, crossing the end of the frame at ${base + frameEnd}`);
  };
  /** `n` more bytes exist in the stream, whether or not the window holds them yet. */
  const exists = (n: number): void => {
    if (n <= streamEnd - pos) return;
    if (opts.streamCapped) limit(`pickle length (${op} needs ${n} bytes at ${base + pos})`, base + streamEnd);
    invalid(`truncated: ${op} needs ${n} bytes, ${streamEnd - pos} left`);
  };
  const need = (n: number): void => {
    framed(n);
    if (n > end - pos) {
      exists(n);
      throw new Truncated();
    }
  };
  const take = (n: number): Uint8Array => {
    need(n);
    const b = bytes.subarray(pos, pos + n);
    pos += n;
    return b;
  };
  const u8 = (): number => { need(1); return bytes[pos++]!; };
  const u16 = (): number => { need(2); const v = view.getUint16(pos, true); pos += 2; return v; };
  const u32 = (): number => { need(4); const v = view.getUint32(pos, true); pos += 4; return v; };
  const i32 = (): number => { need(4); const v = view.getInt32(pos, true); pos += 4; return v; };
  const u64 = (): number => {
    need(8);
    const v = view.getBigUint64(pos, true);
    pos += 8;
    // Anything beyond the stream is refused by need() anyway; keep it a safe number.
    return v > BigInt(streamEnd) ? streamEnd + 1 : Number(v);
  };
  const line = (): Uint8Array => {
    framed(1);
    const stop = frameEnd < 0 ? end : Math.min(frameEnd, end);
    const nl = bytes.subarray(0, stop).indexOf(0x0a, pos);
    if (nl < 0) {
      if (frameEnd >= 0 && frameEnd <= end) invalid(`${op} at ${base + pos}: the line crosses the end of the frame at ${base + frameEnd}`);
      if ((frameEnd >= 0 ? frameEnd : streamEnd) > end) throw new Truncated();
      if (opts.streamCapped) limit('pickle length', base + streamEnd);
      invalid(`truncated: ${op} argument has no newline`);
    }
    const b = bytes.subarray(pos, nl);
    pos = nl + 1;
    return b;
  };
  const text = (b: Uint8Array): string => utf8(b) ?? invalid(`${op}: invalid UTF-8`);
  const textLine = (): string => text(line());
  /** GLOBAL/INST operands: CPython refuses an empty line, and INST names that are not ASCII. */
  const nameLine = (ascii: boolean): string => {
    const b = line();
    if (b.length === 0) invalid(`${op}: empty name`);
    if (ascii && b.some((c) => c > 0x7f)) invalid(`${op}: name is not ASCII`);
    return text(b);
  };

  const push = (v: PyValue): void => {
    if (stack.length >= lim.maxStack) limit('stack depth', lim.maxStack);
    stack.push(v);
  };
  const fence = (): number => (marks.length === 0 ? 0 : marks[marks.length - 1]!);
  const pop = (): PyValue => {
    if (stack.length <= fence()) invalid(`${op}: stack underflow`);
    return stack.pop()!;
  };
  const peek = (): PyValue => {
    if (stack.length <= fence()) invalid(`${op}: stack underflow`);
    return stack[stack.length - 1]!;
  };
  const popMark = (): PyValue[] => {
    if (marks.length === 0) invalid(`${op} without MARK`);
    const items = stack.splice(marks.pop()!);
    work += items.length;
    return items;
  };
  const sized = (n: number): void => { if (n > lim.maxItems) limit('container size', lim.maxItems); };
  const nested = <T extends { depth: number }>(c: T, depth: number): T => {
    if (depth > lim.maxNesting) limit('nesting depth', lim.maxNesting);
    c.depth = depth;
    return c;
  };
  const tuple = (items: PyValue[]): PyTuple => { sized(items.length); return nested({ kind: 'tuple', items, depth: 1 }, depthAbove(items)); };
  const grow = (c: PyList | PySet | PyDict, child: PyValue, size: number): void => {
    sized(size);
    nested(c, Math.max(c.depth, depthOf(child) + 1));
  };
  const resolve = (module: string, name: string): PyGlobal => {
    const [m, n] = importedName(module, name, proto);
    const q = `${m}.${n}`;
    globals.add(q);
    const entry = lookupEntry(q);
    if (entry) return { kind: 'global', name: q, entry };
    flag('PickleDisallowedGlobal', `global ${q} is not allowed`);
    return OPAQUE_GLOBAL(q);
  };

  /** A call on a placeholder (or on such a call's result): a record of what pickle would pass, never run. */
  const foreignCall = (name: string, callee: PyValue, args: PyTuple): PyObject =>
    nested<PyObject>({ kind: 'object', callable: name, args: args.items, depth: 1, foreign: { via: op.toLowerCase(), callee, kwargs: null, states: [], dictItems: [], listItems: [], offset: base + at } }, Math.max(args.depth, depthOf(callee)) + 1);
  const isForeign = (v: PyValue): v is PyObject & { foreign: NonNullable<PyObject['foreign']> } => isContainer(v) && v.kind === 'object' && v.foreign !== undefined;

  /** REDUCE/NEWOBJ/INST/OBJ: only allowlisted callables, which return inert records. */
  const invoke = (callable: PyValue, args: PyValue): PyValue => {
    if (isForeign(callable) && typeof args === 'object' && args !== null && args.kind === 'tuple') return foreignCall(`${callable.callable}(...)`, callable, args);
    // scan mode: calling the result of a disallowed call, already reported
    if (scan && isContainer(callable) && callable.kind === 'object') return { kind: 'object', callable: `${callable.callable}(...)`, args: [], depth: 1 };
    if (typeof callable !== 'object' || callable === null || callable.kind !== 'global') return invalid(`${op} on ${typeName(callable)}, which is not callable`);
    if (typeof args !== 'object' || args === null || args.kind !== 'tuple') return invalid(`${op} ${callable.name}: arguments must be a tuple, got ${typeName(args)}`);
    if (callable.entry === null) {
      flag('PickleDisallowedGlobal', `${op} calls ${callable.name}`);
      return nested<PyObject>({ kind: 'object', callable: callable.name, args: args.items, depth: 1 }, args.depth + 1);
    }
    if (callable.entry.kind === 'placeholder') return foreignCall(callable.name, callable, args);
    if (callable.entry.kind !== 'call') return invalid(`${op}: ${callable.name} is not callable`);
    const out = callable.entry.call(args.items, (m) => invalid(`${op} ${callable.name}: ${m}`));
    if (isContainer(out)) nested(out, out.depth);
    return out;
  };

  const setItems = (target: PyValue, items: PyValue[]): void => {
    if (items.length % 2 !== 0) invalid(`${op}: odd number of items`);
    if (isForeign(target)) {
      for (let i = 0; i < items.length; i += 2) target.foreign.dictItems.push([items[i]!, items[i + 1]!]);
      sized(target.foreign.dictItems.length);
      nested(target, Math.max(target.depth, depthAbove(items)));
      return;
    }
    if (scan && isContainer(target) && target.kind === 'object') return; // opaque: already reported
    if (!isContainer(target) || target.kind !== 'dict') return invalid(`${op} on ${typeName(target)}; only dicts take items`);
    for (let i = 0; i < items.length; i += 2) {
      target.items.set(items[i]!, items[i + 1]!);
      grow(target, items[i + 1]!, target.items.size);
      nested(target, Math.max(target.depth, depthOf(items[i]!) + 1));
    }
  };
  const appendItems = (target: PyValue, items: PyValue[], kind: 'list' | 'set'): void => {
    if (kind === 'list' && isForeign(target)) {
      target.foreign.listItems.push(...items.slice(0, lim.maxItems + 1));
      sized(target.foreign.listItems.length);
      nested(target, Math.max(target.depth, depthAbove(items)));
      return;
    }
    if (scan && isContainer(target) && target.kind === 'object') return;
    if (!isContainer(target) || target.kind !== kind || (target.kind === 'set' && target.frozen)) return invalid(`${op} on ${typeName(target)}; expected a ${kind}`);
    for (const v of items) {
      target.items.push(v);
      grow(target, v, target.items.length);
    }
  };
  const build = (target: PyValue, state: PyValue): void => {
    if (typeof target !== 'object' || target === null) return invalid(`BUILD on ${typeName(target)}`);
    switch (target.kind) {
      case 'tensor': // torch's loader applies the state with Tensor.__setstate__ (set_ can swap the storage): we would read other bytes than torch loads
        return invalid('BUILD on a tensor: torch would apply the state with Tensor.__setstate__ (set_ swaps its storage)');
      case 'unsupported':
        if (opts.refuseTensorBuild) invalid('BUILD on a tensor: torch would apply the state with Tensor.__setstate__ (set_ swaps its storage)');
        return;
      case 'object':
        if (isForeign(target)) {
          target.foreign.states.push(state);
          sized(target.foreign.states.length);
          nested(target, Math.max(target.depth, depthOf(state) + 1));
          return;
        }
        if (scan) return;
        return invalid(`BUILD on ${typeName(target)}`); // opaque in scan mode
      case 'dict': {
        // OrderedDict state: vars(od) (a state dict's `_metadata`), possibly as (dict, slots).
        const s = typeof state === 'object' && state !== null && state.kind === 'tuple' && state.items.length === 2 ? state.items[0]! : state;
        if (s === null) return;
        if (typeof s !== 'object' || s.kind !== 'dict') return invalid(`BUILD on a dict with ${typeName(s)} state`);
        target.attrs = s;
        grow(target, s, target.items.size);
        return;
      }
      default: return invalid(`BUILD on ${typeName(target)}`);
    }
  };
  const persistent = (pid: PyValue): PyValue => {
    if (!opts.persistentLoad) return invalid('persistent ids are not allowed here');
    return opts.persistentLoad(pid, fail);
  };
  const get = (i: number): void => {
    const v = i < dense.length ? dense[i] : sparse.get(i);
    if (v === undefined) invalid(`${op}: memo key ${i} was never stored`);
    push(v!);
  };
  const put = (i: number): void => {
    const v = peek();
    if (read !== null && !read.has(i)) return;
    if (i < dense.length) {
      dense[i] = v;
      return;
    }
    if (!sparse.has(i) && dense.length + sparse.size >= lim.maxMemo) limit('memo entries', lim.maxMemo);
    if (i === dense.length) {
      dense.push(v);
      sparse.delete(i);
    } else sparse.set(i, v);
  };
  const decimal = (long: boolean): PyValue => {
    const t = text(line());
    if (t.length > lim.maxIntBytes * 3) limit('integer size', lim.maxIntBytes);
    const v = parseDecimal(t, long);
    return v === undefined ? invalid(`${op}: not an integer: ${JSON.stringify(t.slice(0, 40))}`) : v;
  };
  const memoIndex = (): number => {
    const v = decimal(false);
    return typeof v === 'number' && v >= 0 ? v : invalid(`${op}: bad memo index`);
  };

  try {
    for (;;) {
      at = pos;
      const code = u8();
      op = OPCODE_NAMES[code] ?? `0x${code.toString(16).padStart(2, '0')}`;
      opcodes[op] = (opcodes[op] ?? 0) + 1;
      if (++work > lim.maxWork) limit('work (opcodes and items moved)', lim.maxWork);
      switch (code) {
        case 0x80: { const p = u8(); if (p > 5) invalid(`unsupported protocol ${p}`); proto = p; break; } // PROTO
        case 0x95: { // FRAME
          if (frameEnd > pos) invalid(`FRAME inside the frame that ends at ${base + frameEnd}`);
          const n = u64();
          exists(n);
          // An empty frame holds nothing: what follows is outside frames, as in CPython.
          if (n > 0) frameEnd = pos + n;
          break;
        }
        case 0x2e: { // STOP
          const value = pop();
          if (frameEnd > pos) invalid(`STOP ${frameEnd - pos} bytes before the end of its frame`);
          if (stack.length > 0 || marks.length > 0) invalid(`${stack.length} values left on the stack at STOP`);
          return { value, end: pos, globals: [...globals], findings, opcodes, truncated: false };
        }
        case 0x28: if (marks.length >= lim.maxMarks) limit('MARK depth', lim.maxMarks); marks.push(stack.length); break;
        case 0x30: if (stack.length > fence()) stack.pop(); else if (marks.length > 0) marks.pop(); else invalid('POP: stack underflow'); break;
        case 0x31: popMark(); break; // POP_MARK
        case 0x32: push(peek()); break; // DUP
        // constants and numbers
        case 0x4e: push(null); break;
        case 0x88: push(true); break;
        case 0x89: push(false); break;
        case 0x4b: push(u8()); break;
        case 0x4d: push(u16()); break;
        case 0x4a: push(i32()); break;
        case 0x8a: case 0x8b: { // LONG1, LONG4
          const n = code === 0x8a ? u8() : i32();
          if (n < 0) invalid(`${op}: negative length`);
          if (n > lim.maxIntBytes) limit(`${op} length ${n}`, lim.maxIntBytes);
          push(decodeLong(take(n)));
          break;
        }
        case 0x49: case 0x4c: { const v = decimal(code === 0x4c); push(v); break; } // INT, LONG
        case 0x47: { need(8); const v = view.getFloat64(pos, false); pos += 8; push({ kind: 'float', value: v }); break; }
        case 0x46: { const t = text(line()); const v = parseFloatText(t); if (v === undefined) invalid(`FLOAT: not a float: ${JSON.stringify(t.slice(0, 40))}`); push({ kind: 'float', value: v! }); break; }
        // strings and bytes: every length is checked against the bytes left before anything is allocated
        case 0x58: push(text(take(u32()))); break; // BINUNICODE
        case 0x8c: push(text(take(u8()))); break; // SHORT_BINUNICODE
        case 0x8d: push(text(take(u64()))); break; // BINUNICODE8
        case 0x56: push(rawUnicodeEscape(line()) ?? invalid('UNICODE: bad escape')); break;
        case 0x55: push(text(take(u8()))); break; // SHORT_BINSTRING (torch decodes str8 as UTF-8)
        case 0x54: { const n = i32(); if (n < 0) invalid('BINSTRING: negative length'); push(text(take(n))); break; }
        case 0x53: push(text(unescapeQuoted(line()) ?? invalid('STRING: bad quoting'))); break;
        case 0x43: push({ kind: 'bytes', data: take(u8()) }); break; // SHORT_BINBYTES
        case 0x42: push({ kind: 'bytes', data: take(u32()) }); break; // BINBYTES
        case 0x8e: case 0x96: push({ kind: 'bytes', data: take(u64()) }); break; // BINBYTES8, BYTEARRAY8
        // containers
        case 0x29: push(tuple([])); break;
        case 0x85: { const a = pop(); push(tuple([a])); break; }
        case 0x86: { const b = pop(); const a = pop(); push(tuple([a, b])); break; }
        case 0x87: { const c = pop(); const b = pop(); const a = pop(); push(tuple([a, b, c])); break; }
        case 0x74: push(tuple(popMark())); break;
        case 0x5d: push({ kind: 'list', items: [], depth: 1 }); break;
        case 0x6c: { const items = popMark(); sized(items.length); push(nested<PyList>({ kind: 'list', items, depth: 1 }, depthAbove(items))); break; }
        case 0x7d: push({ kind: 'dict', items: new Map(), depth: 1, attrs: null }); break;
        case 0x64: { const items = popMark(); const d: PyDict = { kind: 'dict', items: new Map(), depth: 1, attrs: null }; setItems(d, items); push(d); break; }
        case 0x8f: push({ kind: 'set', items: [], frozen: false, depth: 1 }); break;
        case 0x91: { const items = popMark(); sized(items.length); push(nested<PySet>({ kind: 'set', items, frozen: true, depth: 1 }, depthAbove(items))); break; }
        case 0x61: { const v = pop(); appendItems(peek(), [v], 'list'); break; }
        case 0x65: { const items = popMark(); appendItems(peek(), items, 'list'); break; }
        case 0x90: { const items = popMark(); appendItems(peek(), items, 'set'); break; }
        case 0x73: { const v = pop(); const k = pop(); setItems(peek(), [k, v]); break; }
        case 0x75: { const items = popMark(); setItems(peek(), items); break; }
        // memo
        case 0x71: put(u8()); break;
        case 0x72: put(u32()); break;
        case 0x70: put(memoIndex()); break;
        case 0x94: put(dense.length + sparse.size); break; // MEMOIZE: len(memo)
        case 0x68: get(u8()); break;
        case 0x6a: get(u32()); break;
        case 0x67: get(memoIndex()); break;
        // names and calls: nothing is resolved or run
        case 0x63: { const m = nameLine(false); const n = nameLine(false); push(resolve(m, n)); break; } // GLOBAL
        case 0x93: { // STACK_GLOBAL
          const n = pop();
          const m = pop();
          if (typeof m !== 'string' || typeof n !== 'string') {
            flag('PickleInvalid', `STACK_GLOBAL with ${typeName(m)} and ${typeName(n)} operands instead of two str`);
            push(OPAQUE_GLOBAL('<non-str STACK_GLOBAL>'));
          } else push(resolve(m, n));
          break;
        }
        case 0x52: { const args = pop(); const f = pop(); push(invoke(f, args)); break; } // REDUCE
        case 0x81: { const args = pop(); const cls = pop(); push(invoke(cls, args)); break; } // NEWOBJ
        case 0x92: { // NEWOBJ_EX
          const kwargs = pop();
          const args = pop();
          const cls = pop();
          const foreignClass = isForeign(cls) || (typeof cls === 'object' && cls !== null && cls.kind === 'global' && cls.entry?.kind === 'placeholder');
          if (!foreignClass && (!isContainer(kwargs) || kwargs.kind !== 'dict' || kwargs.items.size > 0)) flag('PickleInvalid', 'NEWOBJ_EX with keyword arguments');
          const made = invoke(cls, args);
          if (isForeign(made) && foreignClass) made.foreign.kwargs = kwargs;
          push(made);
          break;
        }
        case 0x69: { // INST: CPython finds the MARK before it reads (and imports) the name
          if (marks.length === 0) invalid('INST without MARK');
          const m = nameLine(true);
          const n = nameLine(true);
          const g = resolve(m, n);
          push(invoke(g, tuple(popMark())));
          break;
        }
        case 0x6f: { const items = popMark(); if (items.length === 0) invalid('OBJ without a class'); push(invoke(items[0]!, tuple(items.slice(1)))); break; }
        case 0x62: { const state = pop(); build(peek(), state); break; } // BUILD
        case 0x51: push(persistent(pop())); break; // BINPERSID
        case 0x50: push(persistent(textLine())); break; // PERSID
        case 0x82: case 0x83: case 0x84: { // EXT1/2/4: the copyreg extension registry
          const n = code === 0x82 ? u8() : code === 0x83 ? u16() : i32();
          const name = `copyreg.extension[${n}]`;
          globals.add(name);
          flag('PickleUnsupportedOpcode', `${op} names ${name}, a global from the copyreg extension registry`);
          push(OPAQUE_GLOBAL(name));
          break;
        }
        case 0x97: // NEXT_BUFFER: out-of-band data the file does not contain
          flag('PickleUnsupportedOpcode', 'NEXT_BUFFER needs out-of-band buffers');
          push({ kind: 'bytes', data: new Uint8Array(0) });
          break;
        case 0x98: peek(); break; // READONLY_BUFFER
        default:
          throw error('PickleUnsupportedOpcode', `unknown opcode ${op}`);
      }
    }
  } catch (e) {
    if (e instanceof Truncated) return { value: undefined, end: pos, globals: [...globals], findings, opcodes, truncated: true };
    if (!scan || !(e instanceof TensorportError)) throw e;
    findings.push(e.toJSON() as unknown as Finding);
    return { value: undefined, end: pos, globals: [...globals], findings, opcodes, truncated: false };
  }
}

/**
 * One pickle that must fill `bytes` exactly, in load mode: what a ZIP checkpoint's data.pkl is.
 * Bytes after STOP are refused, since a scanner and a loader could disagree about them.
 */
export function loadPickle(bytes: Uint8Array, opts: Omit<RunOptions, 'mode' | 'streamLength' | 'streamCapped'> = {}): { value: PyValue; globals: string[] } {
  const r = runPickle(bytes, 0, { ...opts, mode: 'load' });
  if (r.end !== bytes.byteLength) throw bytesAfterStop(bytes.byteLength, r.end, opts);
  return { value: r.value!, globals: r.globals };
}

/** The refusal of bytes after a whole-member pickle's STOP (`loadPickle`, and a captured scan run). */
export function bytesAfterStop(length: number, end: number, opts: Pick<RunOptions, 'path' | 'baseOffset'>): TensorportError {
  return new TensorportError('PickleInvalid', `${opts.path === undefined ? '' : `${opts.path}: `}${length - end} bytes after STOP`, { offset: (opts.baseOffset ?? 0) + end, ...(opts.path === undefined ? {} : { path: opts.path }) });
}
