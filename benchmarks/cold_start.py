"""Cold start: ``import tinyattn`` and the first SDPA call, each in a fresh process.

The numba cache is warmed by one untimed process first, so the figures are what a
user sees on the second run of a script: import time, and the first
``scaled_dot_product_attention`` forward and forward+backward (cache loads, BLAS
library loading, thread pool start). Medians over ``--runs`` processes, wall and CPU
time (CPU time of the process: less sensitive to a shared machine's load).

``--without-scipy`` hides scipy from the child processes, as on a machine with only
tinyattn's runtime dependencies (numpy, numba): numba's start-up imports
``scipy.linalg`` whenever scipy is installed, and that import is most of the
difference between the two rows.

    python -m benchmarks.cold_start [--runs 5] [--profile] [--without-scipy]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

HIDE_SCIPY = r"""
import importlib.abc, sys
class _NoScipy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "scipy" or name.startswith("scipy."):
            raise ImportError("scipy hidden by benchmarks/cold_start.py --without-scipy")
sys.meta_path.insert(0, _NoScipy())
"""

CHILD = r"""
import sys, time
clock, cpu = time.perf_counter, time.process_time
start, start_cpu = clock(), cpu()
import tinyattn
imported, imported_cpu = clock(), cpu()
numba_at_import = "numba" in sys.modules
import tinyattn.nn.functional as F
q = tinyattn.ones(1, 2, 16, 8, requires_grad=True)
call, call_cpu = clock(), cpu()
out = F.scaled_dot_product_attention(q, q, q, is_causal=True)
forward, forward_cpu = clock(), cpu()
out.sum().backward()
done, done_cpu = clock(), cpu()
print(imported - start, forward - call, done - call, int(numba_at_import),
      imported_cpu - start_cpu, forward_cpu - call_cpu, done_cpu - call_cpu,
      int("scipy" in sys.modules))
"""

PROFILE = r"""
import cProfile, pstats, tinyattn
import tinyattn.nn.functional as F
q = tinyattn.ones(1, 2, 16, 8, requires_grad=True)
cProfile.run("F.scaled_dot_product_attention(q, q, q, is_causal=True).sum().backward()",
             "/tmp/_cold_start.prof")
pstats.Stats("/tmp/_cold_start.prof").sort_stats("cumtime").print_stats(40)
"""


def run(code: str, env: dict | None = None) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env
    ).stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="cProfile of one first call")
    parser.add_argument(
        "--without-scipy", action="store_true", help="hide scipy, as with numpy + numba only"
    )
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=os.getcwd())  # this checkout's tinyattn
    prefix = HIDE_SCIPY if args.without_scipy else ""
    run(prefix + CHILD, env)  # warm the numba cache
    if args.profile:
        print(run(prefix + PROFILE, env))
        return
    samples = [[float(x) for x in run(prefix + CHILD, env).split()] for _ in range(args.runs)]
    names = ("import tinyattn", "first SDPA forward", "first SDPA forward+backward")
    for i, name in enumerate(names):
        values, cpu = [s[i] for s in samples], [s[4 + i] for s in samples]
        print(
            f"{name:<30} median {statistics.median(values) * 1e3:7.1f} ms wall "
            f"(min {min(values) * 1e3:.1f}, max {max(values) * 1e3:.1f}), "
            f"{statistics.median(cpu) * 1e3:7.1f} ms CPU; {args.runs} processes"
        )
    print(f"numba imported by `import tinyattn`: {any(s[3] for s in samples)}")
    print(f"scipy imported (by numba's start-up): {any(s[7] for s in samples)}")


if __name__ == "__main__":
    main()
