"""Core framework benchmark: per-op overhead and a matmul + softmax block, vs torch.

Run:  python benchmarks/bench_core.py [--repeat N] [--threads T]

(a) a chain of 1,000 small elementwise ops (forward, then backward) on a (16,)
    float32 tensor: this measures the framework's per-op overhead;
(b) (64, 512) x (512, 512) matmul + softmax + sum, forward and backward, float32.

tinyattn and torch run side by side in this process, with the same number of
threads (``--threads``, default 2: torch's intra-op threads and numpy's BLAS
threads). The runs are interleaved (tinyattn, torch, numpy, tinyattn, ...) so
that both see the same machine load; the table shows the median time of each
and the median over rounds of the per-round ratio tinyattn / torch.
For (a) it also shows tinyattn's forward and backward cost per op.

(b) is bound by the matrix products: tinyattn calls numpy's BLAS (OpenBLAS in
the numpy wheels), torch its own (MKL on x86), so the ratio depends on both.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30, help="timed rounds (default 30)")
    parser.add_argument("--threads", type=int, default=2, help="BLAS / torch threads (2)")
    return parser.parse_args()


# BLAS libraries read their thread count when they load, so it is set before numpy
# (and torch) are imported: that is why the imports below come after this.
ARGS = _parse_args() if __name__ == "__main__" else None
if ARGS is not None:
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = str(ARGS.threads)

import tinyattn  # noqa: E402, I001  (before numpy: it sets OpenBLAS's thread spin timeout)
import numpy as np  # noqa: E402

N_OPS = 1000


def chain(lib, n_ops: int = N_OPS):
    """(a): ``run()`` does forward + backward; ``parts()`` returns (forward s, backward s)."""
    x = lib.ones(16, requires_grad=True)

    def forward():
        y = x
        for _ in range(n_ops // 4):
            y = y * 1.0001
            y = y + 0.001
            y = y.tanh()
            y = y - 0.0005
        return y.sum()

    def run():
        forward().backward()

    def parts():
        t0 = time.perf_counter()
        y = forward()
        t1 = time.perf_counter()
        y.backward()
        return t1 - t0, time.perf_counter() - t1

    return run, parts


def matmul_softmax(lib):
    rng = np.random.default_rng(0)
    a = lib.tensor(rng.standard_normal((64, 512)).astype(np.float32), requires_grad=True)
    w = lib.tensor(
        (rng.standard_normal((512, 512)) / 512**0.5).astype(np.float32), requires_grad=True
    )
    g = lib.tensor(rng.standard_normal((64, 512)).astype(np.float32))

    def run():
        y = lib.softmax(a @ w, dim=-1)
        (y * g).sum().backward()

    return run


def numpy_matmul_softmax():
    """(b) written directly in NumPy (forward + hand-written backward): the floor for tinyattn."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 512)).astype(np.float32)
    w = (rng.standard_normal((512, 512)) / 512**0.5).astype(np.float32)
    g = rng.standard_normal((64, 512)).astype(np.float32)

    def run():
        s = a @ w
        e = np.exp(s - s.max(-1, keepdims=True))
        p = e / e.sum(-1, keepdims=True)
        ds = p * (g - (g * p).sum(-1, keepdims=True))
        return ds @ w.T, a.T @ ds

    return run


def _interleaved(fns: dict, repeat: int, warmup: int = 3) -> dict:
    """Seconds per call of each function, timed in turn in each round (None: skipped).

    Each turn starts with one untimed call: the previous library's worker threads
    may still be spinning (OpenMP, OpenBLAS) and would slow down the first call.
    """
    live = {k: f for k, f in fns.items() if f is not None}
    for f in live.values():
        for _ in range(warmup):
            f()
    times: dict = {k: [] for k in live}
    for _ in range(repeat):
        for k, f in live.items():
            f()
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    return times


def _row(name: str, times: dict) -> str:
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    nan = float("nan")
    ratio = nan
    if "torch" in times:
        ratio = statistics.median(a / b for a, b in zip(times["tinyattn"], times["torch"]))
    return (
        f"{name:<46} {med['tinyattn']:>12.2f} {med.get('torch', nan):>10.2f} "
        f"{med.get('numpy', nan):>10.2f} {ratio:>15.2f}"
    )


def main(args: argparse.Namespace) -> None:
    try:
        import torch

        torch.set_num_threads(args.threads)
    except ImportError:
        torch = None

    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, "
        f"load average {os.getloadavg()[0]:.1f}, python {platform.python_version()}, "
        f"numpy {np.__version__}"
        + (f", torch {torch.__version__}" if torch else "")
        + f"; threads {args.threads}; medians of {args.repeat} interleaved rounds"
    )
    print(
        f"{'benchmark':<46} {'tinyattn ms':>12} {'torch ms':>10} {'numpy ms':>10} "
        f"{'tinyattn/torch':>15}"
    )
    run_a, parts_a = chain(tinyattn)
    times_a = _interleaved(
        {"tinyattn": run_a, "torch": chain(torch)[0] if torch else None}, args.repeat
    )
    print(_row(f"(a) {N_OPS}-op elementwise chain, fwd+bwd", times_a))
    times_b = _interleaved(
        {
            "tinyattn": matmul_softmax(tinyattn),
            "torch": matmul_softmax(torch) if torch else None,
            "numpy": numpy_matmul_softmax(),
        },
        args.repeat,
    )
    print(_row("(b) matmul(64x512x512)+softmax+sum, fwd+bwd", times_b))

    split = [parts_a() for _ in range(args.repeat)]
    per_op = [statistics.median(s[i] for s in split) / (N_OPS + 1) * 1e6 for i in (0, 1)]
    print(
        f"tinyattn per op in (a): forward {per_op[0]:.2f} us, backward {per_op[1]:.2f} us "
        f"({N_OPS + 1} ops: the chain and its sum)"
    )


if __name__ == "__main__":
    sys.exit(main(ARGS))
