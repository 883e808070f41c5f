"""A vectorised numpy implementation of MLX affine quantization (the same kernels as
packages/mlx/src/affine.ts, written independently from the kernel text), used by the benchmark
(bench/mlx.mjs) and by the interop test as a second implementation.

Arrays: weights as float32 values widened from their dtype; bf16 travels as uint16 bits.
Protocol (stdin/stdout) for the test and bench: see main().
"""
import json
import sys
import time

import numpy as np

F32 = np.float32


def to_f32(raw: bytes, dtype: str) -> np.ndarray:
    if dtype == "F32":
        return np.frombuffer(raw, "<f4").astype(F32)
    if dtype == "F16":
        return np.frombuffer(raw, "<f2").astype(F32)
    return (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(F32)


def from_f32(x: np.ndarray, dtype: str) -> bytes:
    """Round f32 values to dtype (ties to even) and return little-endian bytes."""
    x = np.ascontiguousarray(x, dtype=F32)
    if dtype == "F32":
        return x.astype("<f4").tobytes()
    if dtype == "F16":
        return x.astype("<f2").tobytes()
    u = x.view(np.uint32).astype(np.uint64)
    return (((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")).tobytes()


def round_dtype(x: np.ndarray, dtype: str) -> np.ndarray:
    x = np.asarray(x, dtype=F32)
    if dtype == "F32":
        return x
    if dtype == "F16":
        return x.astype(np.float16).astype(F32)
    u = x.view(np.uint32)
    return ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) & np.uint32(0xFFFF0000)).view(F32)


def round_away(x: np.ndarray) -> np.ndarray:
    t = np.trunc(x)
    frac = x - t  # exact
    return t + np.where(np.abs(frac) >= F32(0.5), np.sign(x), F32(0))


def pack(q: np.ndarray, bits: int) -> np.ndarray:
    """Codes (uint) → uint32 words: one little-endian, LSB-first bit stream."""
    q = q.astype(np.uint32).reshape(-1)
    if 32 % bits == 0:
        per = 32 // bits
        shifts = (np.arange(per, dtype=np.uint32) * bits)
        return np.bitwise_or.reduce(q.reshape(-1, per) << shifts, axis=1).astype("<u4")
    stream = ((q[:, None] >> np.arange(bits, dtype=np.uint32)) & 1).astype(np.uint8).reshape(-1)
    return np.packbits(stream, bitorder="little").view("<u4")


def unpack(words: np.ndarray, bits: int, count: int) -> np.ndarray:
    if 32 % bits == 0:
        shifts = np.arange(32 // bits, dtype=np.uint32) * bits
        return ((words.astype(np.uint32)[:, None] >> shifts) & np.uint32(2**bits - 1)).reshape(-1)[:count]
    stream = np.unpackbits(words.astype("<u4").view(np.uint8), bitorder="little")[: count * bits]
    weights = (1 << np.arange(bits, dtype=np.uint32))
    return (stream.reshape(-1, bits).astype(np.uint32) * weights).sum(axis=1, dtype=np.uint32)


def quantize(w: np.ndarray, group_size: int, bits: int, variant: str, dtype: str):
    x = w.astype(F32).reshape(-1, group_size)
    n_bins = F32(2**bits - 1)
    eps = F32(1e-7)
    w_max = x.max(axis=1)
    w_min = x.min(axis=1)
    if variant == "gpu":
        w_max = np.maximum(w_max, F32(0))
    rnd = np.rint if variant == "cpu" else round_away
    mask = np.abs(w_min) > np.abs(w_max)
    scale = np.maximum((w_max - w_min) / n_bins, eps)
    scale = np.where(mask, scale, -scale)
    edge = np.where(mask, w_min, w_max)
    q0 = rnd(edge / scale)
    nz = q0 != 0
    scale = np.where(nz, edge / np.where(nz, q0, F32(1)), scale).astype(F32)
    bias = np.where(nz, edge, F32(0)).astype(F32)
    q = rnd((x - bias[:, None]) / scale[:, None])
    q = np.clip(q, F32(0), n_bins)
    return pack(q, bits), round_dtype(scale, dtype), bias


def dequantize(words: np.ndarray, scales: np.ndarray, biases: np.ndarray, group_size: int, bits: int, dtype: str) -> np.ndarray:
    """T(T(q * s) + b) with s, b already in T (as f32 values); returns f32 values in T."""
    q = unpack(words, bits, scales.size * group_size).astype(F32).reshape(-1, group_size)
    prod = round_dtype(q * scales.reshape(-1, 1), dtype).reshape(-1, group_size)
    return round_dtype(prod + biases.reshape(-1, 1), dtype).reshape(-1)


def main():
    """stdin: a JSON line {op, dtype, bits, group_size, variant, repeat} then raw weight bytes.
    op "quantize": prints JSON {seconds}, then writes words, scales, biases (dtype) as one blob.
    op "roundtrip": quantize then dequantize, printing timing of each; writes dequantized bytes."""
    head = sys.stdin.buffer.readline()
    spec = json.loads(head)
    raw = sys.stdin.buffer.read()
    dtype, bits, gs = spec["dtype"], spec["bits"], spec["group_size"]
    repeat = spec.get("repeat", 1)
    # Timed like the TypeScript side (bench/mlx.mjs): from the weight's bytes to the stored bytes
    # (codes, scales and biases in dtype) and back to dtype bytes; best of `repeat`.
    # CPU seconds too (time.process_time): on a loaded machine they say more than the wall clock.
    tq = td = cq = cd = float("inf")
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        words, scales, biases = quantize(to_f32(raw, dtype), gs, bits, spec.get("variant", "gpu"), dtype)
        stored = (words.astype("<u4").tobytes(), from_f32(scales, dtype), from_f32(biases, dtype))
        tq, cq = min(tq, time.perf_counter() - t0), min(cq, time.process_time() - c0)
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = from_f32(dequantize(np.frombuffer(stored[0], "<u4"), to_f32(stored[1], dtype), to_f32(stored[2], dtype), gs, bits, dtype), dtype)
        td, cd = min(td, time.perf_counter() - t0), min(cd, time.process_time() - c0)
    blob = stored[0] + stored[1] + stored[2] + out
    sys.stdout.write(json.dumps({"quantize_seconds": tq, "dequantize_seconds": td, "quantize_cpu_seconds": cq, "dequantize_cpu_seconds": cd, "numpy": np.__version__}) + "\n")
    sys.stdout.flush()
    sys.stdout.buffer.write(blob)


if __name__ == "__main__":
    main()
