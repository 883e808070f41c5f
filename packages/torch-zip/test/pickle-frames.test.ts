import { BytesSource, TensorportError } from '@tensorport/core';
import { describe, expect, it } from 'vitest';
import { requirePython, runPython } from '../../core/test/helpers/python.ts';
import { loadPickle, openTorchCheckpoint, runPickle, scanCheckpoint, scanPickle } from '../src/index.ts';
import { global, pk, u32 } from './helpers/pickle-bytes.ts';
import { refusal } from './helpers/refusal.ts';

/** FRAME n (8-byte little-endian length). */
const frame = (n: number): number[] => [0x95, ...u32(n), 0, 0, 0, 0];
const short = (s: string): (number | string)[] => [0x8c, s.length, s];
const PROTO4 = [0x80, 0x04];

/** The load-mode refusal of `bytes`, and the same stream scanned: never safe, same finding. */
function invalid(bytes: Uint8Array, message: RegExp): TensorportError {
  const e = refusal(() => loadPickle(bytes));
  expect(e.code).toBe('PickleInvalid');
  expect(e.message).toMatch(message);
  const s = scanPickle(bytes);
  expect(s.safe).toBe(false);
  expect(s.findings.map((f) => f.code)).toContain('PickleInvalid');
  return e;
}

describe('FRAME is a boundary, as in CPython’s C unpickler reading a file', () => {
  it('refuses every length-prefixed argument that starts inside a frame and ends past it', () => {
    // Each opcode's header sits in a 3-byte frame; its argument runs on after the frame.
    const ops: [string, number[]][] = [
      ['SHORT_BINUNICODE', [0x8c, 4]], ['BINUNICODE', [0x58, ...u32(4)]], ['BINUNICODE8', [0x8d, ...u32(4), 0, 0, 0, 0]],
      ['SHORT_BINSTRING', [0x55, 4]], ['BINSTRING', [0x54, ...u32(4)]], ['SHORT_BINBYTES', [0x43, 4]],
      ['BINBYTES', [0x42, ...u32(4)]], ['BINBYTES8', [0x8e, ...u32(4), 0, 0, 0, 0]], ['BYTEARRAY8', [0x96, ...u32(4), 0, 0, 0, 0]],
      ['LONG1', [0x8a, 4]],
    ];
    for (const [name, head] of ops) {
      const bytes = pk(PROTO4, frame(head.length + 2), head, 'abcd', '.');
      const e = invalid(bytes, new RegExp(`^${name} at ${2 + 9 + head.length} needs 4 bytes, crossing the end of the frame at ${11 + head.length + 2}`));
      expect(e.offset).toBe(11);
    }
    // a length prefix or fixed-size argument split by the frame end
    invalid(pk(PROTO4, frame(3), 0x58, 4, 0, 0, 0, 'abcd', '.'), /BINUNICODE at 12 needs 4 bytes, crossing/);
    invalid(pk(PROTO4, frame(3), 0x4a, 1, 0, 0, 0, '.'), /BININT at 12 needs 4 bytes/);
    invalid(pk(PROTO4, frame(5), 0x47, 0, 0, 0, 0, 0, 0, 0, 0, '.'), /BINFLOAT at 12 needs 8 bytes/);
    // a text line (GLOBAL, INT, PERSID...) whose newline is past the frame end
    invalid(pk(PROTO4, frame(6), global('builtins', 'exec'), ')R.'), /GLOBAL at 12: the line crosses the end of the frame at 17/);
    invalid(pk(PROTO4, frame(3), 'I12\n.'), /INT at 12: the line crosses/);
  });

  it('reads what starts exactly at a frame end outside frames, as CPython does', () => {
    // The pickler writes a large bytes object's header in a frame and its payload after it.
    const payload = pk(PROTO4, frame(5), 0x42, ...u32(3), 'xyz', frame(2), 0x85, '.');
    expect(loadPickle(payload).value).toEqual({ kind: 'tuple', items: [{ kind: 'bytes', data: new TextEncoder().encode('xyz') }], depth: 1 });
    // GLOBAL's first line fills the frame, its second is outside; empty frames hold nothing
    const split = pk(PROTO4, frame(10), 'cbuiltins\n', 'set\n', frame(0), frame(3), ')', 0x85, 'R', frame(0), frame(1), '.');
    expect(runPickle(split, 0, { mode: 'load' }).globals).toEqual(['builtins.set']);
    // FRAME as a frame's last byte, its length outside: CPython reads on from the file
    expect(loadPickle(pk(PROTO4, frame(1), 0x95, 2, 0, 0, 0, 0, 0, 0, 0, 'N.')).value).toBe(null);
  });

  it('refuses a FRAME inside a frame, a frame longer than the stream and STOP before its frame ends', () => {
    expect(invalid(pk(PROTO4, frame(12), 'N0', frame(1), 'N.'), /FRAME inside the frame that ends at 23/).offset).toBe(13);
    invalid(pk(PROTO4, frame(12), 'N.'), /truncated: FRAME needs 12 bytes, 2 left/);
    invalid(pk(PROTO4, 0x95, 255, 255, 255, 255, 255, 255, 255, 255, 'N.'), /truncated: FRAME/);
    invalid(pk(PROTO4, frame(3), 'N.N'), /STOP 1 bytes before the end of its frame/);
  });

  it('refuses fickling’s frame-boundary payload: builtins.exec hidden in a BINBYTES after a crossing string', () => {
    const code = pk(...short('builtins'), ...short('exec'), 0x93, ...short("print('x')"), 0x85, 'R');
    // frame: SHORT_BINUNICODE of 8 bytes with 5 inside the frame. A linear reader takes 'AAAAAbbb'
    // and then a BINBYTES holding `code`; CPython skips 'AAAAA', takes 'bbb' + the BINBYTES header
    // as the string, and runs `code`.
    const bytes = pk(PROTO4, frame(7), 0x8c, 8, 'AAAAA', 'bbb', 0x42, ...u32(code.length), code, '00N.');
    const s = scanPickle(bytes);
    expect(s.safe).toBe(false);
    expect(s.findings[0]).toMatchObject({ code: 'PickleInvalid', offset: 11 });
    expect(s.findings[0]!.message).toMatch(/SHORT_BINUNICODE at 13 needs 8 bytes, crossing the end of the frame at 18/);
  });

  it('rewrites Python 2 module names only below protocol 3, as find_class does', () => {
    const at = (proto: number): string[] => runPickle(pk(0x80, proto, global('__builtin__', 'set'), global('dbm', 'open'), '0.'), 0, { mode: 'scan' }).globals;
    expect(at(2)).toEqual(['builtins.set', 'dbm.ndbm.open']);
    expect(at(3)).toEqual(['__builtin__.set', 'dbm.open']);
    expect(runPickle(pk(global('__builtin__', 'xrange'), '.'), 0, { mode: 'scan' }).globals).toEqual(['builtins.range']);
    // __builtin__.set at protocol 4 is not the allowlisted builtins.set: Python cannot even import it
    expect(refusal(() => loadPickle(pk(PROTO4, global('__builtin__', 'set'), ')R.'))).code).toBe('PickleDisallowedGlobal');
  });

  it('INST looks for its MARK before naming (and importing) anything; GLOBAL refuses empty names', () => {
    const r = runPickle(pk(PROTO4, 'N', 'ibuiltins\nexec\n.'), 0, { mode: 'scan' });
    expect(r.globals).toEqual([]);
    expect(r.findings[0]!.message).toMatch(/INST without MARK/);
    expect(refusal(() => loadPickle(pk('c\nexec\n.'))).message).toMatch(/GLOBAL: empty name/);
    expect(refusal(() => loadPickle(pk('(ibuiltins\nse\xe9\n.'))).message).toMatch(/INST: name is not ASCII/);
  });

  it('reads protocol 0 text as CPython does: raw-unicode-escape backslash runs, no octal-looking ints', () => {
    // \\u0041 is two backslashes and u0041 (an even run is no escape); \\\u0041 is two backslashes and A
    expect(loadPickle(pk('V\\\\u0041\n.')).value).toBe('\\\\u0041');
    expect(loadPickle(pk('V\\\\\\u0041\n.')).value).toBe('\\\\A');
    // strtol(base 0) reads INT 010 as 8 and int(text, 0) refuses LONG 010: refused, never read as 10
    expect(refusal(() => loadPickle(pk('I010\n.'))).code).toBe('PickleInvalid');
    expect(refusal(() => loadPickle(pk('L010L\n.'))).code).toBe('PickleInvalid');
    expect(loadPickle(pk('I-7\n.')).value).toBe(-7);
  });
});

const py = await requirePython(['torch']);

// Builds fickling's payload (hidden code: exec of a print of a marker), a torch ZIP whose data.pkl
// it is (torch.save's archive, data.pkl swapped with zipfile), and loads both with the real
// loaders; prints JSON. Nothing but the print runs.
const MAKE = `
import contextlib, io, json, pickletools, struct, sys, zipfile, _pickle, torch
def su(s): return b'\\x8c' + bytes([len(s)]) + s
code = su(b'builtins') + su(b'exec') + b'\\x93' + su(b"print('FRAME-BYPASS-RAN')") + b'\\x85R'
body = b'\\x8c' + bytes([8]) + b'AAAAA'
payload = b'\\x80\\x04\\x95' + struct.pack('<Q', len(body)) + body + b'bbb' + b'B' + struct.pack('<I', len(code)) + code + b'00}.'
linear = [op.name for op, arg, pos in pickletools.genops(payload) if 'GLOBAL' in op.name or op.name == 'INST']
class Recorder(_pickle.Unpickler):
    seen = []
    def find_class(self, m, n):
        self.seen.append(m + '.' + n)
        return lambda *a: None
Recorder(io.BytesIO(payload)).load()
src = io.BytesIO()
torch.save({'w': torch.arange(4.0)}, src, pickle_protocol=4)
out = io.BytesIO()
with zipfile.ZipFile(src) as zin, zipfile.ZipFile(out, 'w', zipfile.ZIP_STORED) as zout:
    for info in zin.infolist():
        zout.writestr(info.filename, payload if info.filename.endswith('/data.pkl') else zin.read(info))
printed = io.StringIO()
with contextlib.redirect_stdout(printed):
    loaded = torch.load(io.BytesIO(out.getvalue()), weights_only=False)
print(json.dumps({'payload': payload.hex(), 'linear': linear, 'imported': Recorder.seen, 'zip': out.getvalue().hex(),
                  'torch_printed': printed.getvalue(), 'loaded': repr(loaded), 'torch': torch.__version__}))
`;

describe.skipIf(!py)('fickling’s frame payload against the real loaders', () => {
  it('runs hidden code in CPython and torch.load; our scan and open path refuse it', async () => {
    const r = JSON.parse(await runPython(py!.exe, MAKE)) as { payload: string; linear: string[]; imported: string[]; zip: string; torch_printed: string; loaded: string };
    // a linear reader (pickletools) sees no global at all, CPython's reader imports one
    expect(r.linear).toEqual([]);
    expect(r.imported).toEqual(['builtins.exec']);
    expect(r.torch_printed).toBe('FRAME-BYPASS-RAN\n');
    expect(r.loaded).toBe('{}');

    const pkl = Uint8Array.from(Buffer.from(r.payload, 'hex'));
    const s = await scanCheckpoint(pkl, { path: 'payload.pkl' });
    expect(s.safe).toBe(false);
    expect(s.findings[0]).toMatchObject({ code: 'PickleInvalid', offset: 11 });

    const zip = Uint8Array.from(Buffer.from(r.zip, 'hex'));
    const z = await scanCheckpoint(zip, { path: 'frame.pt' });
    expect(z.format).toBe('torch-zip');
    expect(z.safe).toBe(false);
    expect(z.findings.find((f) => f.code === 'PickleInvalid')?.message).toMatch(/data\.pkl: SHORT_BINUNICODE at 13 needs 8 bytes, crossing the end of the frame/);
    const e = await openTorchCheckpoint(new BytesSource(zip, 'frame.pt')).then(() => null, (x: unknown) => x);
    expect(e).toBeInstanceOf(TensorportError);
    expect((e as TensorportError).code).toBe('PickleInvalid');
  }, 180_000);

  it('reads CPython’s own framing unchanged: 64 KiB frames across our read window, large bytes outside frames', async () => {
    const hex = await runPython(py!.exe, `
import pickle
obj = {'k%05d' % i: 'v' * 60 for i in range(6000)}
obj['blob'] = b'x' * 200000
print(pickle.dumps(obj, protocol=4).hex())`);
    const bytes = Uint8Array.from(Buffer.from(hex.trim(), 'hex'));
    expect(bytes.byteLength).toBeGreaterThan(4 * 65536);
    const v = loadPickle(bytes).value;
    expect(v).toMatchObject({ kind: 'dict' });
    const d = v as { items: Map<unknown, unknown> };
    expect(d.items.size).toBe(6001);
    expect((d.items.get('blob') as { data: Uint8Array }).data.byteLength).toBe(200000);
    // scanCheckpoint reads a bare pickle through a window that grows from 64 KiB
    const s = await scanCheckpoint(new BytesSource(bytes, 'big.pkl'));
    expect(s).toMatchObject({ safe: true, pickles: 1 });
    expect(s.opcodes.FRAME).toBeGreaterThanOrEqual(2); // the first frame is 65 544 bytes, past the first window
  }, 180_000);
});
