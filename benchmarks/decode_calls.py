"""Per-call microseconds of the four calls a GPT-2-small decode step repeats, against torch.

One decode step (batch 1, one new token, d=768, 12 heads of 64) runs, per layer: two
LayerNorms, four ``nn.Linear`` products, the fused q/k/v ``split`` with a ``view`` and a
``transpose`` per part, and one-query ``scaled_dot_product_attention`` against the cached
keys and values (160 positions here). Each call is timed under ``inference_mode`` with
``timeit`` on the process's CPU time (time spent waiting for a busy core is not counted):
the minimum over ``--repeats`` rounds of ``--number`` calls, stable enough on a shared
machine. Each framework runs in a fresh process of its own, with one
BLAS/OpenMP thread (``--threads``): on a shared machine a second thread mostly waits for a
busy core, and the figures are meant to show each call's Python and kernel.

    python -m benchmarks.decode_calls [--repeats 10] [--number 100] [--threads 1] [--only tinyattn]

``--bytecodes`` counts instead the Python each call runs in tinyattn (bytecodes and
calls, deterministic), and the same for one whole decode step of the 12-layer
GPT-2-small model (``tinyattn.bench``'s inference suite, one token after 128 cached).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
import timeit

D, HEADS, CACHED = 768, 12, 160


def calls(lib) -> dict:
    """The four calls as zero-argument functions on ``lib`` (tinyattn or torch)."""
    nn, F = lib.nn, lib.nn.functional
    lib.manual_seed(0)
    x = lib.randn(1, 1, D)
    norm, linear, qkv_proj = nn.LayerNorm(D), nn.Linear(D, D), nn.Linear(D, 3 * D)
    qkv = qkv_proj(x).detach()
    head = D // HEADS
    q = lib.randn(1, HEADS, 1, head)
    k, v = lib.randn(1, HEADS, CACHED, head), lib.randn(1, HEADS, CACHED, head)

    def split_heads():
        return [h.view(1, 1, HEADS, head).transpose(1, 2) for h in qkv.split(D, dim=2)]

    return {
        "LayerNorm": lambda: norm(x),
        "sdpa, 1 query": lambda: F.scaled_dot_product_attention(q, k, v),
        "nn.Linear 768->768": lambda: linear(x),
        "qkv split + 3 view/transpose": split_heads,
    }


def measure(name: str, repeats: int, number: int) -> dict[str, float]:
    """Minimum microseconds per call of each call, in this process."""
    lib = __import__(name)
    out = {}
    with lib.inference_mode():
        for label, fn in calls(lib).items():
            fn()  # warm-up: numba compilation, lazy imports
            times = timeit.repeat(fn, timer=time.process_time, repeat=repeats, number=number)
            out[label] = 1e6 * min(times) / number
    return out


def decode_step(lib):
    """One whole decode step of the GPT-2-small model (``tinyattn.bench``'s inference suite)
    as a zero-argument function: one token after a 128-token prompt, with a
    :class:`tinyattn.models.KVCache` (each call goes back to the prompt's positions)."""
    from tinyattn.bench._cases import gpt2_model
    from tinyattn.models import KVCache

    lib.manual_seed(0)
    model = gpt2_model(lib, n_layer=12, d=D, n_head=HEADS, n_ctx=1024, vocab=50257)
    model.eval()
    cache = KVCache(12, HEADS, CACHED, D // HEADS)
    with lib.inference_mode():
        model(lib.randint(0, 50257, (1, 128)), cache)
    token = lib.tensor([[0]])

    def step():
        cache.lengths = [128] * 12
        return model(token, cache)

    return step


def _count(fn) -> tuple[int, int]:
    """(bytecodes, Python calls) of one call of ``fn`` (``sys.settrace`` opcode events)."""
    counts = [0, 0]

    def tracer(frame, event, arg):
        frame.f_trace_opcodes = True
        counts[event != "opcode"] += event in ("opcode", "call")
        return tracer

    sys.settrace(tracer)
    fn()
    sys.settrace(None)
    return counts[0], counts[1] - 1  # (less the call of fn itself)


def count_bytecodes(whole_step: bool = True) -> dict[str, tuple[int, int]]:
    """(bytecodes, Python calls) each call runs, in this process (deterministic, unlike a
    timer on a shared machine), after two warm-up calls; ``whole_step``: also one decode
    step of the 12-layer model (:func:`decode_step`).

    The linear products' BLAS thread choice (``kernels.matmul.linear_threads``) times
    each call and picks a count by the machine's load, and the two counts run different
    Python; it is pinned to the library's count here (its ``fixed`` flag, as under
    ``use_deterministic_algorithms``), so that the figures do not depend on the load.
    """
    import tinyattn
    from tinyattn.kernels.matmul import linear_threads

    pieces = calls(tinyattn)
    if whole_step:
        pieces["whole decode step, 12 layers"] = decode_step(tinyattn)
    out = {}
    fixed, linear_threads.fixed = linear_threads.fixed, True
    try:
        with tinyattn.inference_mode():
            for label, fn in pieces.items():
                fn(), fn()
                out[label] = _count(fn)
    finally:
        linear_threads.fixed = fixed
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--number", type=int, default=100)
    parser.add_argument("--only", choices=("tinyattn", "torch"))
    parser.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP threads")
    parser.add_argument("--bytecodes", action="store_true", help="count tinyattn's Python")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bytecodes:
        for label, (ops, calls_) in count_bytecodes().items():
            print(f"{label:34}{ops:7d} bytecodes {calls_:5d} Python calls")
        return
    if args.child:
        print(json.dumps(measure(args.only, args.repeats, args.number)))
        return
    results = {}
    root = os.path.dirname(os.path.dirname(importlib.util.find_spec("tinyattn").origin))
    for name in [args.only] if args.only else ["tinyattn", "torch"]:
        cmd = [sys.executable, __file__, "--child", "--only", name]
        cmd += ["--repeats", str(args.repeats), "--number", str(args.number)]
        env = dict(os.environ, PYTHONPATH=root)  # the tinyattn this process would import
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = str(args.threads)
        done = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
        results[name] = json.loads(done.stdout.strip().splitlines()[-1])
    names = list(results)
    print(f"{'call (us, min of timeit rounds)':34}" + "".join(f"{n:>10}" for n in names))
    for label in results[names[0]]:
        row = "".join(f"{results[n][label]:10.1f}" for n in names)
        print(f"{label:34}{row}")


if __name__ == "__main__":
    main()
