import { TensorportError } from '@tensorport/core';
import { parsePyLiteral, PyTuple, type PyValue } from '@tensorport/npz';

/**
 * Whether numpy's `read_array` unpickles what follows a `.npy` header: it does when
 * `np.dtype(descr).hasobject`, whatever the spelling (`'|O'`, `'O8'`, `'object'`, `'\x4f'`, a
 * structured dtype with an object field, a subarray of objects). The header is parsed as numpy
 * parses it (a Python literal, npz's parser); a descr we cannot classify, or a header numpy might
 * read and we cannot, is a finding rather than a guess. Returns where the pickle starts, or null.
 */
export function npyPickleOffset(bytes: Uint8Array, name: string): number | null {
  const major = bytes[6];
  const minor = bytes[7];
  const lenBytes = major === 1 ? 2 : 4;
  if (bytes.byteLength < 8 + lenBytes || minor !== 0 || (major !== 1 && major !== 2 && major !== 3)) {
    throw new TensorportError('NpyUnsupportedVersion', `${name}: truncated or unknown .npy header`, { path: name });
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const start = 8 + lenBytes + (lenBytes === 2 ? view.getUint16(8, true) : view.getUint32(8, true));
  if (start > bytes.byteLength) throw new TensorportError('NpyTruncated', `${name}: .npy header runs past the end`, { path: name, offset: bytes.byteLength });
  const raw = bytes.subarray(8 + lenBytes, start);
  let header: PyValue;
  try {
    const text = new TextDecoder(major === 3 ? 'utf-8' : 'latin1', { fatal: true }).decode(raw);
    header = parsePyLiteral(text, 8 + lenBytes);
  } catch (cause) {
    throw new TensorportError('NpyInvalidHeader', `${name}: .npy header is not a literal tensorport can parse; numpy's literal_eval may, and then unpickle the data if it names an object dtype`, { path: name, offset: 8 + lenBytes, cause });
  }
  // numpy refuses anything but a dict with exactly these keys before it looks at descr
  if (!(header instanceof Map) || [...header.keys()].sort().join() !== 'descr,fortran_order,shape') return null;
  const kind = classify(header.get('descr')!, 0);
  if (kind === 'raw') return null;
  if (kind === 'object') return start;
  throw new TensorportError('NpyUnsupportedDtype', `${name}: descr ${describe(header.get('descr')!)} is not a dtype spelling tensorport knows; numpy may read it as an object array, whose data is a pickle`, { path: name, offset: 8 + lenBytes });
}

type Kind = 'raw' | 'object' | 'unknown';

/** typestrs (`<f4`, `|b1`, `<M8[ns]`) of any kind but O, and numpy's dtype names: raw bytes, no pickle. */
const RAW_TYPESTR = /^[<>|=]?[A-NP-Za-z?](?:[0-9]{1,4})?(?:\[[A-Za-z0-9]{1,8}\])?$/;
const RAW_NAME = /^(bool_?|u?int(8|16|32|64)?|float(16|32|64|96|128)?|complex(64|128|192|256)?|half|single|double|longdouble|u?byte|u?short|u?intc|u?intp|u?longlong|str_?|bytes_?|void|datetime64(\[[A-Za-z0-9]{1,8}\])?|timedelta64(\[[A-Za-z0-9]{1,8}\])?)$/;
const OBJECT = /^([<>|=]?O[0-9]*|object_?|object0)$/;

function classify(d: PyValue, depth: number): Kind {
  if (depth > 16) return 'unknown';
  if (typeof d === 'string') return OBJECT.test(d) ? 'object' : RAW_TYPESTR.test(d) || RAW_NAME.test(d) ? 'raw' : 'unknown';
  if (d instanceof PyTuple) return d.items.length === 2 ? classify(d.items[0]!, depth + 1) : 'unknown';
  if (Array.isArray(d)) {
    // a structured dtype: [(name, descr), (name, descr, shape), ...]
    let kind: Kind = 'raw';
    for (const f of d) {
      if (!(f instanceof PyTuple) || f.items.length < 2 || f.items.length > 3) return 'unknown';
      const k = classify(f.items[1]!, depth + 1);
      if (k === 'object') return 'object';
      if (k === 'unknown') kind = 'unknown';
    }
    return kind;
  }
  return 'unknown';
}

function describe(d: PyValue): string {
  return typeof d === 'string' ? JSON.stringify(d.slice(0, 60)) : d instanceof PyTuple ? 'a tuple' : Array.isArray(d) ? 'a list' : typeof d;
}
