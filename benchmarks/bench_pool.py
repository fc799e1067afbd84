"""max_pool2d / avg_pool2d forward+backward at (8, 64, 56, 56), kernel 3, stride 2, padding 1,
float32: the median and min of several runs, one framework per process.

    python benchmarks/bench_pool.py tinyattn     # or: torch
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np


def main(lib_name: str, repeats: int = 15) -> None:
    if lib_name == "torch":
        import torch as lib

        lib.set_num_threads(2)
    else:
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
            y = pool(x, 3, 2, 1)
            y.backward(g)
            dt = time.perf_counter() - t0
            if i >= 3:  # warm-up (the first call compiles the kernels)
                times.append(dt)
        print(
            f"{lib_name:8s} {name}: median {statistics.median(times) * 1e3:.2f} ms, "
            f"min {min(times) * 1e3:.2f} ms"
        )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tinyattn")
