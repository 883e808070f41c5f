"""Differential oracle for the pickle interpreter: CPython's own C unpickler, made inert.

Reads {"seed": int, "count": int} on stdin, generates `count` seeded opcode streams (structured
programs, protocol 0-5, every length-prefixed opcode, GLOBAL/STACK_GLOBAL/INST/OBJ/REDUCE/NEWOBJ,
memo opcodes, well-formed and malformed FRAMEs, hidden programs in string payloads, truncations
and byte edits) and unpickles each with `_pickle.Unpickler` in three ways a real loader reads:

  file    io.BytesIO, no peek()          (torch.load of a ZIP checkpoint: data.pkl is a BytesIO)
  memory  a file whose peek() returns everything left: reads like pickle.loads(bytes)
  peekN   io.BufferedReader over the bytes with an N-byte buffer (open() of a legacy .pt or .npy)

Nothing is imported or run: find_class records the (module, name) CPython would import -- after
its own fix_imports rewrite, observed through stand-in modules with the real import blocked -- and
returns Stub, an inert class; persistent_load returns a Stub. Writes one JSON line per stream:
{"hex", "modes": {mode: {"ok", "globals": ["m.n", ...], "end" | "error"}}}.
"""
import builtins
import io
import json
import random
import resource
import struct
import sys
import types

import _compat_pickle
import _pickle


class Stub:
    """What every global and persistent id becomes: accepts any call or mutation, does nothing."""

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return Stub()

    def __setitem__(self, key, value):
        pass

    def __setstate__(self, state):
        pass

    def append(self, value):
        pass

    def extend(self, values):
        pass

    def add(self, value):
        pass


class _Seen(Exception):
    pass


class _StandIn(types.ModuleType):
    def __getattr__(self, attr):
        raise _Seen(self.__name__, attr)


def _stand_in_import(name, *args, **kwargs):
    # find_class imports through builtins.__import__, then takes the module from sys.modules.
    if name not in sys.modules or not isinstance(sys.modules[name], _StandIn):
        raise ImportError(f"the oracle imports nothing ({name})")
    return sys.modules[name]


def imported_name(unpickler, module, name):
    """The (module, name) CPython's find_class would import, without importing anything."""
    mapped = _compat_pickle.NAME_MAPPING.get((module, name)) or (_compat_pickle.IMPORT_MAPPING.get(module, module), name)
    if mapped == (module, name):
        return module, name
    # Whether the rewrite applies depends on the unpickler's protocol, which Python does not
    # expose: let the real find_class pick, with stand-in modules in sys.modules and imports off.
    saved = {m: sys.modules.get(m) for m in {module, mapped[0]}}
    real_import = builtins.__import__
    seen = None
    try:
        for m in saved:
            sys.modules[m] = _StandIn(m)
        builtins.__import__ = _stand_in_import
        try:
            _pickle.Unpickler.find_class(unpickler, module, name)
        except _Seen as e:
            seen = e.args
    finally:
        builtins.__import__ = real_import
        for m, old in saved.items():
            if old is None:
                sys.modules.pop(m, None)
            else:
                sys.modules[m] = old
    if seen is None:
        raise RuntimeError(f"find_class({module!r}, {name!r}) looked up nothing")
    for m, n in (mapped, (module, name)):
        if seen[0] == m and seen[1] in (n, n.split(".")[0]):
            return m, n
    raise RuntimeError(f"find_class({module!r}, {name!r}) looked up {seen}")


class Recorder(_pickle.Unpickler):
    def __init__(self, file, log):
        super().__init__(file, encoding="utf-8")  # torch.load's encoding
        self.log = log

    def find_class(self, module, name):
        m, n = imported_name(self, module, name)
        self.log.append(f"{m}.{n}")
        return Stub

    def persistent_load(self, pid):
        return Stub()


class PeekAll(io.BytesIO):
    def peek(self, n=0):
        return self.getvalue()[self.tell():]


def unpickle(data, mode):
    log = []
    if mode == "file":
        f = io.BytesIO(data)
    elif mode == "memory":
        f = PeekAll(data)
    else:
        f = io.BufferedReader(io.BytesIO(data), buffer_size=int(mode[4:]))
    try:
        Recorder(f, log).load()
        return {"ok": True, "globals": log, "end": f.tell()}
    except RecursionError:
        return {"ok": False, "globals": log, "error": "RecursionError"}
    except Exception as e:  # any failure of the real loader is an outcome to compare
        return {"ok": False, "globals": log, "error": f"{type(e).__name__}: {str(e)[:100]}"}


# ---------------------------------------------------------------- stream generator

GLOBALS = [
    ("builtins", "exec"), ("builtins", "eval"), ("builtins", "getattr"), ("os", "system"), ("posix", "system"),
    ("subprocess", "Popen"), ("collections", "OrderedDict"), ("torch._utils", "_rebuild_tensor_v2"),
    ("torch", "FloatStorage"), ("torch", "Size"), ("builtins", "set"), ("builtins", "slice"),
    ("__builtin__", "eval"), ("__builtin__", "set"), ("__builtin__", "xrange"), ("copy_reg", "_reconstructor"),
    ("dbm", "open"), ("exceptions", "ValueError"), ("UserDict", "UserDict"), ("socket", "_socketobject"),
    ("os.path", "join"), ("a.b", "c.d"), ("m\u00f3d", "x"), ("nt", "system\r"), ("numpy.core.multiarray", "_reconstruct"),
]
NAME_PARTS = ["builtins", "exec", "os", "system", "torch", "FloatStorage", "__builtin__", "set", "", "a b", "\u00e9"]


def u8(n):
    return bytes([n & 0xFF])


def i4(n):
    return struct.pack("<i", n)


def u4(n):
    return struct.pack("<I", n)


def u8b(n):
    return struct.pack("<Q", n)


def frame(n):
    return b"\x95" + u8b(n)


def string_op(r, s):
    """An opcode pushing the str `s` (or, sometimes, bytes of it)."""
    b = s.encode("utf-8", "surrogatepass")
    k = r.randrange(12)
    if k == 0 and len(b) < 256:
        return b"\x8c" + u8(len(b)) + b  # SHORT_BINUNICODE
    if k == 1:
        return b"X" + u4(len(b)) + b  # BINUNICODE
    if k == 2:
        return b"\x8d" + u8b(len(b)) + b  # BINUNICODE8
    if k == 3 and len(b) < 256:
        return b"U" + u8(len(b)) + b  # SHORT_BINSTRING
    if k == 4:
        return b"T" + i4(len(b)) + b  # BINSTRING
    if k == 5 and "\n" not in s:
        return b"S" + escaped(r, b) + b"\n"  # STRING
    if k == 6 and "\n" not in s:
        return b"V" + raw_escaped(r, s) + b"\n"  # UNICODE
    if k == 7:
        return b"B" + u4(len(b)) + b  # BINBYTES: not a str
    if k == 8 and len(b) < 256:
        return b"C" + u8(len(b)) + b  # SHORT_BINBYTES
    if k == 9:
        return (b"\x8e" if r.random() < 0.5 else b"\x96") + u8b(len(b)) + b  # BINBYTES8, BYTEARRAY8
    return b"\x8c" + u8(len(b)) + b if len(b) < 256 else b"X" + u4(len(b)) + b


def escaped(r, b):
    """STRING's quoted text for the bytes `b`, with every kind of escape codecs.escape_decode knows."""
    q = r.choice([b"'", b'"'])
    out = bytearray(q)
    for c in b:
        k = r.randrange(8)
        if k == 0:
            out += b"\\x%02x" % c
        elif k == 1:
            out += b"\\%o" % c if r.random() < 0.5 else b"\\%03o" % c
        elif c == 0x0A:
            out += b"\\n"
        elif c == 0x5C or bytes([c]) == q:
            out += b"\\" + bytes([c])
        else:
            out.append(c)
    if r.random() < 0.05:
        out += r.choice([b"\\q", b"\\x4", b"\\777", b"\\"])  # unknown, short and out-of-range escapes
    return bytes(out + q)


def raw_escaped(r, s):
    """UNICODE's raw-unicode-escape text for `s`, with \\u/\\U escapes and runs of backslashes."""
    out = bytearray()
    for ch in s:
        k = r.randrange(6)
        if k == 0 or ord(ch) > 0xFF:
            out += b"\\u%04x" % ord(ch) if ord(ch) < 0x10000 else b"\\U%08x" % ord(ch)
        elif k == 1:
            out += b"\\U%08x" % ord(ch)
        elif k == 2:
            out += b"\\" * r.randrange(1, 5) + ch.encode("latin-1")  # backslashes before a literal
        elif k == 3:
            out += b"\\" * r.choice([2, 3, 4]) + b"u%04x" % ord(ch)  # only an odd run makes an escape
        else:
            out += ch.encode("latin-1")
    return bytes(out)


class Program:
    def __init__(self, r, proto):
        self.r = r
        self.proto = proto
        self.memo = []  # memo keys stored so far
        self.stored = 0

    def name(self):
        r = self.r
        if r.random() < 0.85:
            return r.choice(GLOBALS)
        return r.choice(NAME_PARTS), r.choice(NAME_PARTS)

    def global_op(self, depth):
        r = self.r
        m, n = self.name()
        k = r.randrange(10)
        if k < 4 and "\n" not in m + n:
            return b"c" + m.encode("utf-8", "surrogatepass") + b"\n" + n.encode("utf-8", "surrogatepass") + b"\n"
        if k == 4 and self.memo:  # names from the memo
            key = r.choice(self.memo)
            return b"h" + u8(key) + string_op(r, n) + b"\x93" if key < 256 else b"j" + u4(key) + string_op(r, n) + b"\x93"
        if k == 5:
            return self.value(depth + 1) + self.value(depth + 1) + b"\x93"  # anything as operands
        return string_op(r, m) + self.memoize() + string_op(r, n) + b"\x93"

    def memoize(self):
        r = self.r
        k = r.randrange(8)
        if k == 0:
            self.memo.append(self.stored)
            self.stored += 1
            return b"\x94"  # MEMOIZE
        if k == 1:
            key = r.choice([self.stored, r.randrange(300), 70000])
            self.memo.append(key)
            self.stored += 1
            return (b"q" + u8(key)) if key < 256 else (b"r" + u4(key))
        if k == 2:
            key = r.randrange(50)
            self.memo.append(key)
            return b"p" + str(key).encode() + b"\n"
        return b""

    def value(self, depth=0):
        r = self.r
        if depth > 5:
            return r.choice([b"N", b"K\x01", b"\x88", b")"])
        k = r.randrange(30)
        if k == 0:
            return b"N"
        if k == 1:
            return r.choice([b"\x88", b"\x89", b"I01\n", b"I00\n", b"I7\n", b"L12L\n"])
        if k == 2:
            return r.choice([b"K" + u8(r.randrange(256)), b"M" + struct.pack("<H", r.randrange(65536)), b"J" + i4(r.randrange(-9, 9))])
        if k == 3:
            return r.choice([b"\x8a\x01\xff", b"\x8b" + i4(2) + b"\x01\x02", b"G" + struct.pack(">d", 1.5), b"F1.5\n"])
        if k in (4, 5):
            return string_op(r, self.name()[r.randrange(2)])
        if k == 6:
            return b")"
        if k == 7:
            return self.value(depth + 1) + r.choice([b"\x85", b"N\x86", b"NN\x87"])
        if k == 8:
            return b"(" + b"".join(self.value(depth + 1) for _ in range(r.randrange(3))) + r.choice([b"t", b"l", b"\x91"])
        if k == 9:
            return b"]" + self.memoize() + b"".join(self.value(depth + 1) + b"a" for _ in range(r.randrange(3)))
        if k == 10:
            return b"]" + b"(" + b"".join(self.value(depth + 1) for _ in range(r.randrange(3))) + b"e"
        if k == 11:
            return b"}" + self.memoize() + b"".join(self.value(depth + 1) + self.value(depth + 1) + b"s" for _ in range(r.randrange(2)))
        if k == 12:
            return b"(" + self.value(depth + 1) + self.value(depth + 1) + b"d"
        if k == 13:
            return b"}(" + self.value(depth + 1) + self.value(depth + 1) + b"u"
        if k == 14:
            return b"\x8f(" + self.value(depth + 1) + b"\x90"
        if k in (15, 16, 17):
            return self.global_op(depth) + self.memoize()
        if k in (18, 19):  # a call
            args = self.value(depth + 1) + b"\x85" if r.random() < 0.7 else b")"
            return self.global_op(depth) + args + r.choice([b"R", b"R", b"\x81"]) + self.memoize()
        if k == 20:
            m, n = self.name()
            if "\n" in m + n:
                return b"N"
            return b"(" + self.value(depth + 1) + b"i" + m.encode("utf-8") + b"\n" + n.encode("utf-8") + b"\n"
        if k == 21:
            return b"(" + self.global_op(depth) + self.value(depth + 1) + b"o"
        if k == 22:
            return self.global_op(depth) + b")" + r.choice([b"}", b"}" + string_op(r, "k") + b"Ns"]) + b"\x92"
        if k == 23:
            return self.global_op(depth) + b")R" + r.choice([b"}", b"N", b"}" + string_op(r, "a") + b"Ns"]) + b"b"
        if k == 24 and self.memo:
            key = r.choice(self.memo + [r.randrange(300)])
            return r.choice([b"h" + u8(key), b"j" + u4(key), b"g" + str(key).encode() + b"\n"])
        if k == 25:  # a persistent id, torch style or not
            pid = b"(" + string_op(r, "storage") + self.global_op(depth) + string_op(r, "0") + string_op(r, "cpu") + b"K\x02t"
            return (pid if r.random() < 0.7 else self.value(depth + 1)) + b"Q"
        if k == 26:
            return b"P" + self.name()[0].encode("utf-8").replace(b"\n", b"") + b"\n"
        if k == 27:  # a hidden program inside a string payload: misaligned reading runs it
            return self.hide(self.global_op(depth) + b")R")
        if k == 28:
            return r.choice([b"\x82\x01", b"\x83\x01\x00", b"\x84\x01\x00\x00\x00", b"\x97", b"N\x98", b"N2", b"N(0", b"N(1N"])
        return self.value(depth + 1) + self.value(depth + 1) + b"0"

    def hide(self, code):
        r = self.r
        k = r.randrange(4)
        if k == 0:
            return b"B" + u4(len(code)) + code
        if k == 1:
            return b"C" + u8(len(code)) + code if len(code) < 256 else b"B" + u4(len(code)) + code
        if k == 2:
            return b"\x8e" + u8b(len(code)) + code
        return b"\x8c" + u8(len(code)) + code if len(code) < 256 else b"X" + u4(len(code)) + code

    def stream(self):
        r = self.r
        head = b"" if self.proto == 0 and r.random() < 0.5 else b"\x80" + u8(self.proto)
        body = [self.value() for _ in range(r.randrange(1, 4))]
        ops = []
        for i, v in enumerate(body):
            ops.append(v)
            if i < len(body) - 1:
                ops.append(b"0")
        ops.append(b".")
        return head, ops


def framed(r, head, ops):
    """Frames over the program's chunks: as CPython writes them, or wrong in every way we know."""
    data = b"".join(ops)
    k = r.randrange(9)
    if k == 0:
        return head + data
    if k in (1, 2):  # proper frames at chunk boundaries, some chunks outside frames
        out = [head]
        i = 0
        while i < len(ops):
            j = min(len(ops), i + r.randrange(1, 4))
            chunk = b"".join(ops[i:j])
            out.append(frame(len(chunk)) + chunk if r.random() < 0.8 else chunk)
            i = j
        return b"".join(out)
    if k == 3:  # empty frames anywhere between chunks
        return head + b"".join((frame(0) if r.random() < 0.3 else b"") + c for c in ops)
    if k == 4:  # a frame whose header ends exactly where a payload starts (large bytes, as the pickler writes)
        out = [head]
        for c in ops:
            cut = r.randrange(1, len(c) + 1)
            out.append(frame(cut) + c[:cut] + c[cut:])
        return b"".join(out)
    if k == 5:  # frames of random length at random byte offsets: crossings
        out = [head]
        i = 0
        while i < len(data):
            j = min(len(data), i + r.randrange(1, 12))
            n = r.choice([j - i, j - i, j - i - 1, j - i + 1, r.randrange(0, 20), len(data) - i, len(data) - i + 5])
            out.append(frame(max(0, n)) + data[i:j])
            i = j
        return b"".join(out)
    if k == 6:  # a FRAME inside a frame
        inner = r.randrange(len(data) + 1)
        n = r.choice([len(data), len(data) + 9, inner + 1])
        return head + frame(n) + data[:inner] + frame(r.randrange(0, len(data) - inner + 2)) + data[inner:]
    if k == 7:  # a frame longer than the stream, or huge
        return head + frame(r.choice([len(data) + r.randrange(1, 9), 1 << 40, (1 << 64) - 1])) + data
    return head + frame(len(data)) + data  # one frame around everything


def divergent(r):
    """fickling's frame-boundary payload, randomised: an argument crossing a short frame makes the
    C unpickler (reading a file) skip the frame's tail and run what a linear reader sees as data."""
    m, n = r.choice(GLOBALS[:6])
    code = b"\x8c" + u8(len(m)) + m.encode() + b"\x8c" + u8(len(n)) + n.encode() + b"\x93" + b"N\x85R"
    swallow = r.choice([b"B" + u4(len(code)), b"C" + u8(len(code)), b"\x8e" + u8b(len(code))])
    tail = len(swallow)  # the frame's tail a file reader skips = what a linear reader runs next
    filler = r.randrange(0, 6)
    opcode = r.choice([b"\x8c", b"X", b"U", b"T"])
    header = opcode + (u8(tail + filler) if opcode in (b"\x8c", b"U") else u4(tail + filler))
    body = header + b"A" * tail
    return b"\x80\x04" + frame(len(body)) + body + b"b" * filler + swallow + code + b"00N."


def mutate(r, data):
    k = r.randrange(10)
    b = bytearray(data)
    if k == 0 and b:
        del b[r.randrange(len(b)):]  # truncation
    elif k == 1 and b:
        b[r.randrange(len(b))] = r.randrange(256)
    elif k == 2:
        b.insert(r.randrange(len(b) + 1), r.randrange(256))
    elif k == 3 and b:
        del b[r.randrange(len(b))]
    elif k == 4:
        b += bytes(r.randrange(256) for _ in range(r.randrange(1, 6)))  # junk after STOP
    return bytes(b)


def generate(r):
    if r.random() < 0.06:
        return divergent(r)
    proto = r.choice([0, 1, 2, 2, 3, 4, 4, 4, 5, 5])
    head, ops = Program(r, proto).stream()
    data = framed(r, head, ops) if proto >= 4 or r.random() < 0.15 else head + b"".join(ops)
    return mutate(r, data) if r.random() < 0.35 else data


def main():
    req = json.load(sys.stdin)
    r = random.Random(req["seed"])
    out = sys.stdout
    for _ in range(req["count"]):
        data = generate(r)
        modes = {m: unpickle(data, m) for m in ("file", "memory", f"peek{r.choice([1, 7, 16, 64, 8192])}")}
        out.write(json.dumps({"hex": data.hex(), "modes": modes}) + "\n")


if __name__ == "__main__":
    # CPython allocates what a length or memo key asks for (LONG_BINPUT 2**31 resizes the memo to
    # 16 GB and clears it): a cap on the address space turns that into a quick MemoryError.
    resource.setrlimit(resource.RLIMIT_AS, (1 << 28, 1 << 28))
    sys.setrecursionlimit(10000)
    main()
