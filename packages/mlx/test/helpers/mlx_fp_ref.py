"""A second transcription of MLX's fp quantization modes (mxfp4, mxfp8, nvfp4), vectorised with
numpy and written from the MLX source (mlx 846d176), sharing nothing with packages/mlx/src:

- "gpu": the Metal kernels `fp_quantize` / `fp_dequantize` (mlx/backend/metal/kernels/
  fp_quantized.h) with the conversions of kernels/fp4.h and kernels/fp8.h; all f32.
- "cpu": the op-graph fallbacks of `fp_quantize` / `fp_dequantize` in mlx/ops.cpp, evaluated with
  numpy ops in the weight's dtype (float16 natively, bfloat16 through ml_dtypes; both round each
  op's f32 result back, as MLX's CPU types do), and the E4M3 conversion of
  mlx/backend/cpu/unary_ops.h (`ToFP8`, a bit-level round-to-nearest-even with saturation).

Values travel as raw little-endian bytes; see main() for the protocol the test uses.
"""
import json
import sys

import ml_dtypes
import numpy as np

F32 = np.float32
DT = {"F32": np.float32, "F16": np.float16, "BF16": ml_dtypes.bfloat16}
LUT = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], dtype=F32)


def e4m3_encode(x):
    """ToFP8: f32 bits → E4M3 bits; |x| >= 464 (and Inf/NaN) saturate to 0x7E."""
    bits = np.asarray(x, dtype=F32).view(np.uint32)
    sign = bits & np.uint32(0x80000000)
    mag = bits ^ sign
    # Below 2^-6: add 2^14 so the f32 adder rounds to a multiple of 2^-9 (the subnormal step).
    low = ((mag.view(F32) + F32(2.0**14)).view(np.uint32) - np.uint32(141 << 23)).astype(np.uint8)
    odd = (mag >> np.uint32(20)) & np.uint32(1)
    high = ((mag + np.uint32(((7 - 127) << 23) & 0xFFFFFFFF) + np.uint32(0x7FFFF) + odd) >> np.uint32(20)).astype(np.uint8)
    out = np.where(mag < np.uint32(121 << 23), low, high)
    out = np.where(mag >= np.uint32(543 << 21), np.uint8(0x7E), out)
    return (out | (sign >> np.uint32(24)).astype(np.uint8)).astype(np.uint8)


def e4m3_decode(b):
    """FromFP8: (b & 127) << 7 read as an f16, times 256, signed by bit 7."""
    b = np.asarray(b, dtype=np.uint8)
    h = ((b & np.uint8(127)).astype(np.uint16) << np.uint16(7)).view(np.float16).astype(F32) * F32(256)
    return np.where(b & np.uint8(128), -h, h).astype(F32)


def e2m1_encode(x):
    x = np.asarray(x, dtype=F32)
    a = np.abs(x)
    mag = np.select(
        [a > 5, a >= 3.5, a > 2.5, a >= 1.75, a > 1.25, a >= 0.75, a > 0.25],
        [7, 6, 5, 4, 3, 2, 1],
        default=0,
    ).astype(np.uint8)
    mag = np.where(np.isnan(x), np.uint8(7), mag | np.where(np.signbit(x), np.uint8(8), np.uint8(0)))
    return mag.astype(np.uint8)


def e8m0_encode_gpu(x):
    x = np.asarray(x, dtype=F32)
    with np.errstate(divide="ignore"):
        le = np.log2(x).astype(F32)
    n = np.where(le < 0, -np.floor(-le + 0.5), np.floor(le + 0.5))
    n = np.clip(np.where(np.isfinite(n), n, -1000), -127, 127)
    return np.where(np.isfinite(x), n + 127, 255).astype(np.uint8)


def e8m0_decode_gpu(b):
    b = np.asarray(b, dtype=np.uint32)
    return np.where(b == 0, np.uint32(0x400000), b << np.uint32(23)).view(F32)


def pack(codes, bits):
    codes = codes.astype(np.uint32).reshape(-1)
    if bits == 8:
        return codes.astype(np.uint8).view("<u4")
    q = codes.reshape(-1, 8) << (np.arange(8, dtype=np.uint32) * 4)
    return np.bitwise_or.reduce(q, axis=1).astype("<u4")


def unpack(words, bits):
    if bits == 8:
        return words.astype("<u4").view(np.uint8)
    return ((words[:, None] >> (np.arange(8, dtype=np.uint32) * 4)) & np.uint32(15)).reshape(-1).astype(np.uint8)


def spec(mode):
    return {"mxfp4": (32, 4), "mxfp8": (32, 8), "nvfp4": (16, 4)}[mode]


def quantize(w, mode, variant, dtype, global_scale=None):
    """w: f32 values (exact in dtype), flat. Returns (uint32 words, uint8 scales)."""
    gs, bits = spec(mode)
    maxval = 6.0 if bits == 4 else 448.0
    g = w.reshape(-1, gs)
    enc = F32(1) if global_scale is None else F32(448.0 * 6.0) / F32(global_scale)
    if variant == "gpu":
        g = g.astype(F32)
        sd = (np.abs(g).max(axis=1) / F32(maxval)).astype(F32)
        if mode == "nvfp4":
            if global_scale is not None:
                sd = (sd * enc).astype(F32)
            sb = e4m3_encode(sd)
            s = e4m3_decode(sb)
            with np.errstate(divide="ignore"):
                mul = np.where(s == 0, F32(0), enc / s).astype(F32)
        else:
            sb = e8m0_encode_gpu(sd)
            mul = (F32(1) / e8m0_decode_gpu(sb)).astype(F32)
        x = (g * mul[:, None]).astype(F32)
        codes = e2m1_encode(x) if bits == 4 else e4m3_encode(x)
        return pack(codes, bits), sb
    T = DT[dtype]
    g = g.astype(T)
    amax = np.abs(g).max(axis=1, keepdims=True)
    s = (amax / np.array(maxval, dtype=T)).astype(T)
    if mode == "nvfp4":
        s32 = s.astype(F32) * enc
        sb = e4m3_encode(s32)
        with np.errstate(divide="ignore", invalid="ignore"):
            x = ((g / e4m3_decode(sb).astype(T)).astype(T).astype(F32) * enc).astype(F32)
        dist = np.abs(x[..., None] - LUT.astype(T).astype(F32)).astype(F32)
    else:
        with np.errstate(divide="ignore"):
            n = np.rint(np.log2(s.astype(F32)).astype(F32).astype(T)).astype(F32)
        n = np.where(s == 0, F32(0), n)
        p = np.power(F32(2), n).astype(T)
        x = (g / p).astype(T)
        sb = ((n.astype(np.int64) + 127) % 256).astype(np.uint8)
        if bits == 4:
            dist = np.abs((x[..., None] - LUT.astype(T)).astype(T))
    if bits == 4:
        codes = np.argmin(dist, axis=-1).astype(np.uint8)
    else:
        codes = e4m3_encode(x.astype(F32))
    return pack(codes, bits), sb.reshape(-1)


def dequantize(words, scales, mode, variant, dtype, global_scale=None):
    """Returns (values as f32, the dtype MLX returns)."""
    gs, bits = spec(mode)
    q = unpack(words, bits).reshape(-1, gs)
    el = LUT[q] if bits == 4 else e4m3_decode(q)
    T = DT[dtype]
    if mode == "nvfp4":
        s = e4m3_decode(scales)
        if global_scale is not None:
            s = (s * (F32(global_scale) / F32(2688))).astype(F32)
            out = (el * s[:, None]).astype(F32)
            return out, ("F32" if variant == "cpu" else dtype)
        return (el * s[:, None]).astype(F32).astype(T).astype(F32), dtype
    if variant == "gpu":
        s = e8m0_decode_gpu(scales)
        with np.errstate(over="ignore", invalid="ignore"):
            out = (el * s[:, None]).astype(F32)
        return out.astype(T).astype(F32), dtype
    with np.errstate(over="ignore"):
        s = np.power(np.array(2, dtype=T), scales.astype(T) - np.array(127, dtype=T)).astype(T)
    with np.errstate(invalid="ignore", over="ignore"):
        out = (el.astype(T) * s[:, None]).astype(T)
    return out.astype(F32), dtype


def to_bytes(values, dtype):
    return np.ascontiguousarray(np.asarray(values, dtype=F32).astype(DT[dtype])).tobytes()


def main():
    """stdin: u32 header length, JSON list of cases, then each case's weights (its dtype's bytes).
    stdout per case: words, scales, dequantized values (in the dtype MLX returns)."""
    sys.dont_write_bytecode = True
    data = sys.stdin.buffer.read()
    n = int.from_bytes(data[:4], "little")
    cases = json.loads(data[4 : 4 + n])
    pos = 4 + n
    out = []
    for c in cases:
        size = c["count"] * (4 if c["dtype"] == "F32" else 2)
        w = np.frombuffer(data[pos : pos + size], dtype=DT[c["dtype"]]).astype(F32)
        pos += size
        gsc = c.get("globalScale")
        words, scales = quantize(w, c["mode"], c["variant"], c["dtype"], gsc)
        back, odt = dequantize(words, scales, c["mode"], c["variant"], c["dtype"], gsc)
        out.append(words.astype("<u4").tobytes() + scales.astype(np.uint8).tobytes() + to_bytes(back, odt))
    sys.stdout.buffer.write(b"".join(out))


if __name__ == "__main__":
    main()
