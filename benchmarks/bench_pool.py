"""max_pool2d / avg_pool2d forward+backward at (8, 64, 56, 56), kernel 3, stride 2, padding 1,
float32, tinyattn against torch: each framework in its own process, alternating, the
min and median of the runs of each process.

    python benchmarks/bench_pool.py                # both, 3 processes each
    python benchmarks/bench_pool.py tinyattn       # one process of one framework
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def run(lib_name: str, repeats: int = 20) -> None:
    if lib_name == "torch":
        import torch as lib

        lib.set_num_threads(2)
    else:
        sys.path.insert(0, str(ROOT))  # this checkout's tinyattn
        import tinyattn as lib
    F = lib.nn.functional
    x0 = np.random.default_rng(0).standard_normal((8, 64, 56, 56)).astype(np.float32)
    g0 = np.random.default_rng(1).standard_normal((8, 64, 28, 28)).astype(np.float32)
    for name in ("max_pool2d", "avg_pool2d"):
        pool = getattr(F, name)
        times = []
        for i in range(repeats + 3):
            x = lib.tensor(x0, requires_grad=True)
            g = lib.tensor(g0)
            t0 = time.perf_counter()
            pool(x, 3, 2, 1).backward(g)
            if i >= 3:  # warm-up (the first call compiles or loads the kernels)
                times.append(time.perf_counter() - t0)
        median, best = statistics.median(times) * 1e3, min(times) * 1e3
        print(f"{lib_name:8s} {name}: median {median:6.2f} ms, min {best:6.2f} ms", flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        run(sys.argv[1])
    else:
        for _ in range(3):
            for lib_name in ("tinyattn", "torch"):
                subprocess.run([sys.executable, __file__, lib_name], check=True)
