"""ctc_loss and the special functions, forward + backward, tinyattn against torch.

Each framework runs in its own process (alternating, ``--procs`` processes each); each
process times every case ``--repeats`` times after warm-up runs and prints the median.
The summary gives, per case, the median over the processes of those medians and the
ratio tinyattn / torch. The machine may be shared: rerun before trusting a close ratio.

    python benchmarks/bench_ctc_special.py                     # both suites, both frameworks
    python benchmarks/bench_ctc_special.py --suite special     # or ctc
    python benchmarks/bench_ctc_special.py --path /tmp/old     # another checkout's tinyattn
    python benchmarks/bench_ctc_special.py --before /tmp/old   # a column for it too (A/B)
    python benchmarks/bench_ctc_special.py --threads 1         # each framework on one thread
    python benchmarks/bench_ctc_special.py --one tinyattn ctc  # one process, raw lines

CTC cases: (T, N, C, S) with random lengths (input T/2..T, target S/2..S), float32,
``ctc_loss(log_probs, ...)`` with ``log_probs`` a leaf, reduction 'mean', then backward.
Special cases: 100,000 float64 elements in each function's domain, op then ``.sum()``
backward (so the derivative's kernel is timed too).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CTC_CASES = {"small": (50, 4, 20, 10), "medium": (200, 16, 40, 40), "large": (400, 32, 60, 80)}
N_SPECIAL = 100_000
# name: (domain low, high, call(special, torch-like lib, x))
SPECIAL = {
    "erfc": (-6, 6, lambda sp, lib, x: sp.erfc(x)),
    "erfcx": (-3, 20, lambda sp, lib, x: sp.erfcx(x)),
    "erfinv": (-0.999, 0.999, lambda sp, lib, x: sp.erfinv(x)),
    "lgamma": (-10, 30, lambda sp, lib, x: sp.gammaln(x)),
    "digamma": (0.01, 30, lambda sp, lib, x: sp.digamma(x)),
    "polygamma1": (0.01, 30, lambda sp, lib, x: sp.polygamma(1, x)),
    "polygamma3": (0.01, 30, lambda sp, lib, x: sp.polygamma(3, x)),
    "ndtr": (-8, 8, lambda sp, lib, x: sp.ndtr(x)),
    "ndtri": (1e-6, 1 - 1e-6, lambda sp, lib, x: sp.ndtri(x)),
    "log_ndtr": (-30, 8, lambda sp, lib, x: sp.log_ndtr(x)),
    "i0": (-40, 40, lambda sp, lib, x: sp.i0(x)),
    "i0e": (-40, 40, lambda sp, lib, x: sp.i0e(x)),
    "i1": (-40, 40, lambda sp, lib, x: sp.i1(x)),
    "i1e": (-40, 40, lambda sp, lib, x: sp.i1e(x)),
    "zeta": (1.5, 20, lambda sp, lib, x: sp.zeta(x, 2.5)),
    "entr": (0.01, 5, lambda sp, lib, x: sp.entr(x)),
}


def _timed(fn, repeats: int, warmup: int) -> float:
    times = []
    for i in range(repeats + warmup):
        t0 = time.perf_counter()
        fn()
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def _ctc_inputs(case):
    steps, n, classes, width = case
    rng = np.random.default_rng(0)
    x = rng.standard_normal((steps, n, classes)).astype(np.float32)
    lp = x - np.log(np.exp(x).sum(2, keepdims=True))
    targets = rng.integers(1, classes, (n, width))
    il = rng.integers(steps // 2, steps + 1, n)
    il[0] = steps
    tl = rng.integers(width // 2, width + 1, n)
    return lp, targets, il, tl


def run(lib_name: str, suite: str, path: str | None, repeats: int) -> dict[str, float]:
    if lib_name == "torch":
        import torch as lib

        lib.set_num_threads(int(os.environ.get("NUMBA_NUM_THREADS", "2")))
    else:
        sys.path.insert(0, path or str(ROOT))
        import tinyattn as lib
    out = {}
    if suite in ("ctc", "all"):
        F = lib.nn.functional
        for name, case in CTC_CASES.items():
            lp0, tg, il, tl = _ctc_inputs(case)
            tg_t, il_t, tl_t = lib.tensor(tg), lib.tensor(il), lib.tensor(tl)

            def step(lp0=lp0, tg_t=tg_t, il_t=il_t, tl_t=tl_t):
                lp = lib.tensor(lp0, requires_grad=True)
                F.ctc_loss(lp, tg_t, il_t, tl_t).backward()

            out[f"ctc {name} {case}"] = _timed(step, repeats if name != "large" else 5, 2)
    if suite in ("special", "all"):
        sp = lib.special
        for name, (low, high, call) in SPECIAL.items():
            x0 = np.random.default_rng(1).uniform(low, high, N_SPECIAL)

            def step(x0=x0, call=call, name=name):
                x = lib.tensor(x0, requires_grad=name != "zeta")
                y = call(sp, lib, x)
                if y.requires_grad:  # (zeta has no derivative in either)
                    y.sum().backward()

            out[f"special {name}"] = _timed(step, repeats, 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", default="all", choices=["all", "ctc", "special"])
    ap.add_argument("--path", default=None, help="directory holding the tinyattn to time")
    ap.add_argument("--procs", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--threads", type=int, default=2, help="threads of each framework")
    ap.add_argument("--before", default=None, help="also time the tinyattn in this directory")
    ap.add_argument("--one", nargs=2, metavar=("LIB", "SUITE"))
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run(args.one[0], args.one[1], args.path, args.repeats)))
        return
    columns = [("tinyattn", "tinyattn", args.path), ("torch", "torch", None)]
    if args.before:
        columns.insert(0, ("before", "tinyattn", args.before))
    results: dict[str, dict[str, list[float]]] = {label: {} for label, _, _ in columns}
    for _ in range(args.procs):
        for label, lib_name, path in columns:  # alternating: the same load for each
            cmd = [sys.executable, __file__, "--one", lib_name, args.suite]
            cmd += ["--repeats", str(args.repeats)] + (["--path", path] if path else [])
            env = dict(os.environ, NUMBA_NUM_THREADS=str(args.threads))
            line = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
            for key, ms in json.loads(line.stdout.strip().splitlines()[-1]).items():
                results[label].setdefault(key, []).append(ms)
    medians = {
        label: {k: statistics.median(v) for k, v in r.items()} for label, r in results.items()
    }
    head = "".join(f"{label + ' ms':>13s}" for label, _, _ in columns)
    ratios = "".join(f"{label + '/torch':>15s}" for label, _, _ in columns if label != "torch")
    print(f"{'case':36s}{head}{ratios}")
    for key, theirs in medians["torch"].items():
        times = "".join(f"{medians[label][key]:13.3f}" for label, _, _ in columns)
        rel = "".join(
            f"{medians[label][key] / theirs:15.2f}" for label, _, _ in columns if label != "torch"
        )
        print(f"{key:36s}{times}{rel}")


if __name__ == "__main__":
    main()
