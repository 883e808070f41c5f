/**
 * The memo keys a pickle ever reads (GET, BINGET, LONG_BINGET), from one walk over its opcodes
 * that decodes only argument lengths, or null when the walk cannot be sure (an unknown opcode,
 * MEMOIZE, whose key is the memo's size, an argument past the end, a GET it cannot parse).
 *
 * Why: torch.save memoizes every object it writes (8 PUTs per tensor: 800,000 for 100,000 tensors),
 * and reads back a handful (the storage class, 'cpu', the rebuild function). Stored, every argument
 * tuple of every tensor lives until STOP; not stored, it dies young. The interpreter stores a PUT
 * only when its key is read somewhere. If this walk and the interpreter ever disagreed, a GET would
 * find nothing and the pickle would be refused: never a different value.
 */
type Arg = 'none' | 'stop' | 1 | 2 | 4 | 8 | 'len1' | 'len4' | 'len8' | 'line' | 'lines2';

const ARGS: Readonly<Record<number, Arg>> = {
  0x28: 'none', 0x29: 'none', 0x2e: 'stop', 0x30: 'none', 0x31: 'none', 0x32: 'none',
  0x42: 'len4', 0x43: 'len1', 0x46: 'line', 0x47: 8, 0x49: 'line', 0x4a: 4, 0x4b: 1, 0x4c: 'line', 0x4d: 2, 0x4e: 'none',
  0x50: 'line', 0x51: 'none', 0x52: 'none', 0x53: 'line', 0x54: 'len4', 0x55: 'len1', 0x56: 'line', 0x58: 'len4',
  0x5d: 'none', 0x61: 'none', 0x62: 'none', 0x63: 'lines2', 0x64: 'none', 0x65: 'none', 0x67: 'line', 0x68: 1,
  0x69: 'lines2', 0x6a: 4, 0x6c: 'none', 0x6f: 'none', 0x70: 'line', 0x71: 1, 0x72: 4, 0x73: 'none', 0x74: 'none',
  0x75: 'none', 0x7d: 'none', 0x80: 1, 0x81: 'none', 0x82: 1, 0x83: 2, 0x84: 4, 0x85: 'none', 0x86: 'none', 0x87: 'none',
  0x88: 'none', 0x89: 'none', 0x8a: 'len1', 0x8b: 'len4', 0x8c: 'len1', 0x8d: 'len8', 0x8e: 'len8', 0x8f: 'none',
  0x90: 'none', 0x91: 'none', 0x92: 'none', 0x93: 'none', 0x95: 8, 0x96: 'len8', 0x97: 'none', 0x98: 'none',
};
const MEMOIZE = 0x94;
const GET = 0x67;
const BINGET = 0x68;
const LONG_BINGET = 0x6a;

export function memoReads(bytes: Uint8Array, start: number): Set<number> | null {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = bytes.length;
  const reads = new Set<number>();
  let pos = start;
  const line = (): number => {
    const nl = bytes.indexOf(0x0a, pos);
    return nl < 0 ? -1 : nl + 1;
  };
  while (pos < end) {
    const code = bytes[pos++]!;
    if (code === MEMOIZE) return null;
    const arg = ARGS[code];
    if (arg === undefined) return null;
    let next: number;
    if (arg === 'stop') return reads;
    else if (arg === 'none') next = pos;
    else if (typeof arg === 'number') next = pos + arg;
    else if (arg === 'len1') next = pos + 1 + (pos < end ? bytes[pos]! : end);
    else if (arg === 'len4') next = pos + 4 + (pos + 4 <= end ? view.getUint32(pos, true) : end);
    else if (arg === 'len8') next = pos + 8 + (pos + 8 <= end ? Number(view.getBigUint64(pos, true)) : end);
    else {
      next = line();
      if (next >= 0 && arg === 'lines2') {
        pos = next;
        next = line();
      }
      if (next < 0) return null;
    }
    if (next > end) return null;
    if (code === BINGET) reads.add(bytes[pos]!);
    else if (code === LONG_BINGET) reads.add(view.getUint32(pos, true));
    else if (code === GET) {
      // a key has at most 15 digits here; a longer line is not spread into arguments
      if (next - 1 - pos > 15) return null;
      const text = String.fromCharCode(...bytes.subarray(pos, next - 1));
      if (!/^[0-9]{1,15}$/.test(text)) return null;
      reads.add(Number(text));
    }
    pos = next;
  }
  return null;
}
