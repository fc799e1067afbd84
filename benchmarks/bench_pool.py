"""max_pool2d / avg_pool2d forward+backward at (8, 64, 56, 56), kernel 3, stride 2, padding 1,
float32, tinyattn against torch: each framework in its own process, alternating, the
min and median of 30 runs of each process after 10 warm-up runs.

    python benchmarks/bench_pool.py                # both, 3 processes each, 2 threads
    python benchmarks/bench_pool.py --threads 1    # both, on one thread each
    python benchmarks/bench_pool.py tinyattn 2     # one process of one framework
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def run(lib_name: str, threads: int, repeats: int = 30, warmup: int = 10) -> None:
    if lib_name == "torch":
        import torch as lib

        lib.set_num_threads(threads)
    else:
        os.environ["NUMBA_NUM_THREADS"] = str(threads)  # (read when numba loads)
        sys.path.insert(0, str(ROOT))  # this checkout's tinyattn
        import tinyattn as lib
    F = lib.nn.functional
    x0 = np.random.default_rng(0).standard_normal((8, 64, 56, 56)).astype(np.float32)
    g0 = np.random.default_rng(1).standard_normal((8, 64, 28, 28)).astype(np.float32)
    for name in ("max_pool2d", "avg_pool2d"):
        pool = getattr(F, name)
        times = []
        for i in range(repeats + warmup):
            x = lib.tensor(x0, requires_grad=True)
            g = lib.tensor(g0)
            t0 = time.perf_counter()
            pool(x, 3, 2, 1).backward(g)
            # warm-up: the first call compiles or loads the kernels, and the first dozen
            # backward passes of a process find fresh memory (page faults) for dx
            if i >= warmup:
                times.append(time.perf_counter() - t0)
        median, best = statistics.median(times) * 1e3, min(times) * 1e3
        print(
            f"{lib_name:8s} {name} ({threads} thr): median {median:6.2f} ms, min {best:6.2f} ms",
            flush=True,
        )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] != "--threads":
        run(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2)
    else:
        n = sys.argv[2] if len(sys.argv) > 2 else "2"
        for _ in range(3):
            for lib_name in ("tinyattn", "torch"):
                subprocess.run([sys.executable, __file__, lib_name, n], check=True)
