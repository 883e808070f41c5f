import { OPCODE_ARGS } from './opcodes.ts';

const MEMOIZE = 0x94;
const GET = 0x67;
const BINGET = 0x68;
const LONG_BINGET = 0x6a;

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
    const arg = OPCODE_ARGS[code];
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
