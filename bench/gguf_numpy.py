"""Times gguf.quants.dequantize (gguf-py, numpy) on the block files bench/gguf.mjs writes.

    python3 bench/gguf_numpy.py DIR TYPE[,TYPE...] REPEAT
For each TYPE reads DIR/TYPE.in (raw blocks), dequantizes REPEAT times, writes DIR/TYPE.py.out
(float32) and prints one JSON object {type: best seconds}.
"""
import json
import os
import sys
import time

import numpy as np
from gguf import GGMLQuantizationType as T, quants

out_dir, names, repeat = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])
times = {}
for name in names:
    raw = np.fromfile(os.path.join(out_dir, name + ".in"), dtype=np.uint8).reshape(1, -1)
    src = raw.view(np.float16) if name == "F16" else raw.view(np.float32) if name == "F32" else raw
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        y = quants.dequantize(src, T[name])
        best = min(best, time.perf_counter() - t0)
    np.asarray(y, dtype=np.float32).tofile(os.path.join(out_dir, name + ".py.out"))
    times[name] = best
print(json.dumps(times))
