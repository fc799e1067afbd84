"""What this machine allows: each benchmark case's linear products alone, on NumPy's BLAS,
against torch's time for the whole case.

tinyattn hands its matrix products to NumPy's BLAS. A case whose linear products alone,
run back to back with nothing else around them, take longer than ``goal x`` torch's time
for the whole case cannot reach that goal on this machine with NumPy's BLAS, however
little everything else costs. This script measures that floor for the cases the
performance goals name:

- the GPT training steps and ``MultiheadAttention`` (forward and backward: ``x @ W.T``,
  ``g @ W`` and ``g.T @ x`` per linear layer; for ``MultiheadAttention`` also the
  attention's six products per head; the GPT steps' causal attention is left out, so
  their floor is a lower bound);
- GPT-2-small prefill (128 rows through 12 layers, then the tied head on the last row)
  and one decode step (one row through all 49 products: every weight is read once, so
  this is the machine's memory bandwidth at work).

Each framework runs in its own fresh process, the two alternating for ``--rounds``
rounds; a torch process times torch's products and torch's whole case (the benchmark's
own cases, ``tinyattn/bench/_cases.py`` and ``_inference.py``, loaded by path: tinyattn is
never imported there). Medians over the rounds' medians.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python -m benchmarks.ceilings [--rounds 3]
    python -m benchmarks.ceilings --quick --rounds 1    # tiny shapes: checks the script
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parents[1] / "tinyattn" / "bench"


def _gpt_products(rows: int, d: int, n_layer: int, vocab: int) -> list[tuple[int, int, int]]:
    """(rows, in, out) of a GPT's linear products: q/k/v, projection, MLP in and out per
    layer, then the head."""
    layer = [(rows, d, 3 * d), (rows, d, d), (rows, d, 4 * d), (rows, 4 * d, d)]
    return layer * n_layer + [(rows, d, vocab)]


def cases(quick: bool) -> dict[str, dict]:
    """case name -> its products, whether backward runs, and the goal (tinyattn/torch time)."""
    if quick:
        return {
            "GPT step tiny": dict(products=_gpt_products(32, 32, 1, 64), backward=True, goal=0.7),
            "MHA (2, 16, 32) need_weights=False": dict(
                products=[(32, 32, 96), (32, 32, 32)], attention=(8, 16, 8), backward=True, goal=0.6
            ),
            "decode tiny": dict(products=_gpt_products(1, 32, 1, 64), backward=False, goal=0.43),
        }
    gpt2 = dict(d=768, n_layer=12, vocab=50257)
    prefill = _gpt_products(128, 768, 12, 0)[:-1] + [(1, 768, 50257)]  # head: last row only
    return {
        "GPT step L=4 d=256 h=8 T=128 B=8 V=256": dict(
            products=_gpt_products(1024, 256, 4, 256), backward=True, goal=0.70
        ),
        "GPT step L=6 d=384 h=6 T=256 B=8 V=256": dict(
            products=_gpt_products(2048, 384, 6, 256), backward=True, goal=0.60
        ),
        "MHA (8, 128, 512) need_weights=False": dict(
            products=[(1024, 512, 1536), (1024, 512, 512)],
            attention=(64, 128, 64),
            backward=True,
            goal=0.60,
        ),
        "MHA (4, 512, 512) need_weights=False": dict(
            products=[(2048, 512, 1536), (2048, 512, 512)],
            attention=(32, 512, 64),
            backward=True,
            goal=0.60,
        ),
        "GPT-2-small prefill, 128 tokens": dict(products=prefill, backward=False, goal=0.45),
        # decode: >= 2.3x torch's tokens/s is <= 1/2.3 of its time per token
        "GPT-2-small decode, time per token": dict(
            products=_gpt_products(1, **gpt2), backward=False, goal=round(1 / 2.3, 3)
        ),
    }


def _median_ms(fn, repeats: int) -> float:
    fn()  # warm-up: threads, first touch
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - start)
    return 1e3 * statistics.median(seconds)


def products_run(lib_name: str, products: list, backward: bool, attention=None):
    """A function running the case's products as tinyattn's linear layers do, then, for
    ``attention`` = (batch x heads, L, head dim), the attention's own: ``q k^T`` and
    ``p v`` per head, and in backward the four of their gradients (no softmax)."""
    linear = _linear_run(lib_name, products, backward)
    if attention is None:
        return linear
    heads = _attention_run(lib_name, attention, backward)

    def run() -> None:
        linear()
        heads()

    return run


def _attention_run(lib_name: str, attention: tuple[int, int, int], backward: bool):
    n, length, dim = attention
    rng = np.random.default_rng(1)
    q, k, v, g = (rng.standard_normal((n, length, dim), dtype=np.float32) for _ in range(4))
    p = rng.standard_normal((n, length, length), dtype=np.float32)
    if lib_name == "torch":
        import torch

        q, k, v, g, p = (torch.from_numpy(a) for a in (q, k, v, g, p))

    def run() -> None:  # one head at a time: 2-D products, as tinyattn's matmul runs them
        for i in range(n):
            q[i] @ k[i].T
            p[i] @ v[i]
            if backward:
                p[i].T @ g[i]  # d v
                g[i] @ v[i].T  # d p
                p[i] @ k[i]  # d q (d s has p's shape)
                p[i].T @ q[i]  # d k

    return run


def _linear_run(lib_name: str, products: list, backward: bool):
    rng = np.random.default_rng(0)
    arrays = []
    for rows, n_in, n_out in products:
        x, w, g = (
            rng.standard_normal(shape, dtype=np.float32)
            for shape in ((rows, n_in), (n_out, n_in), (rows, n_out))
        )
        arrays.append((x, w, g))

    def forward(x, w):  # tinyattn's linear: x2 @ weight.T, the transpose a view
        return x @ w.T

    if lib_name == "torch":
        import torch

        arrays = [tuple(torch.from_numpy(a) for a in triple) for triple in arrays]
        forward = torch.nn.functional.linear  # torch's linear: one addmm-style call

    def run() -> None:
        for x, w, g in arrays:
            forward(x, w)
            if backward:
                g @ w
                g.T @ x

    return run


def _bench_module(name: str):
    """``tinyattn/bench/<name>.py`` loaded by path (no tinyattn import in a torch process)."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def torch_cases(quick: bool, repeats: int) -> dict[str, float]:
    """torch's time (ms) for each whole case of :func:`cases`."""
    import torch

    bench, inference = _bench_module("_cases"), _bench_module("_inference")
    gpts, out = bench.gpt_configs(quick), {}
    names = [n for n in cases(quick) if n.startswith("GPT step")]
    for name, config in zip(names, gpts):
        out[name] = _median_ms(bench.gpt_step(**config)(torch), repeats)
    shapes, heads = bench.mha_shapes(quick)
    for shape in shapes:
        run = bench.mha(shape, heads, False)(torch)
        out[bench.mha_name(shape, False)] = _median_ms(run, repeats)
    out |= _torch_inference(torch, bench, inference, quick, repeats)
    return out


def _torch_inference(torch, bench, inference, quick: bool, repeats: int) -> dict[str, float]:
    c = inference.config(quick)
    torch.manual_seed(0)
    sizes = {k: c[k] for k in ("n_layer", "d", "n_head", "n_ctx", "vocab")}
    model = bench.gpt2_model(torch, **sizes).eval()
    prompt = torch.tensor(np.random.default_rng(0).integers(0, c["vocab"], (1, c["prompt"])))
    out = {}
    with torch.inference_mode():
        if not quick:
            prefill = lambda: model(prompt, inference.new_cache(torch, "concatenating", c))  # noqa: E731
            out["GPT-2-small prefill, 128 tokens"] = _median_ms(prefill, repeats)
        per_token = []
        for _ in range(max(2, repeats // 2)):
            cache = inference.new_cache(torch, "preallocated", c)
            _, seconds = inference.greedy_decode(model, torch, prompt, cache, c["new_tokens"])
            per_token.append(1e3 * seconds / (c["new_tokens"] - 1))
    name = "decode tiny" if quick else "GPT-2-small decode, time per token"
    out[name] = statistics.median(per_token)
    return out


def child(lib_name: str, quick: bool, repeats: int) -> dict:
    """One process's figures: its products per case, and (torch) its whole cases."""
    figures = {
        name: {"products ms": _median_ms(products_run(lib_name, **_spec(case)), repeats)}
        for name, case in cases(quick).items()
    }
    if lib_name == "torch":
        for name, ms in torch_cases(quick, repeats).items():
            figures[name]["case ms"] = ms
    return figures


def _spec(case: dict) -> dict:
    return {k: case[k] for k in ("products", "backward", "attention") if k in case}


def _run_child(lib_name: str, quick: bool, repeats: int) -> dict:
    command = [sys.executable, __file__, "--child", lib_name, "--repeats", str(repeats)]
    done = subprocess.run(
        command + (["--quick"] if quick else []), capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(rounds: list[dict], quick: bool) -> str:
    """The markdown table of the medians over rounds."""

    def med(lib: str, name: str, key: str) -> float:
        return statistics.median(r[lib][name][key] for r in rounds)

    lines = [
        "| case | NumPy BLAS: products ms | torch: products ms | torch: whole case ms "
        "| floor (NumPy products / torch case) | goal | reachable with NumPy's BLAS |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, case in cases(quick).items():
        ours, theirs = med("numpy", name, "products ms"), med("torch", name, "products ms")
        whole = med("torch", name, "case ms")
        floor = ours / whole
        verdict = "yes" if floor <= case["goal"] else "no"
        lines.append(
            f"| {name} | {ours:.1f} | {theirs:.1f} | {whole:.1f} | {floor:.2f}x "
            f"| <= {case['goal']:.2f}x | {verdict} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> str | None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="tiny shapes: checks the script")
    parser.add_argument("--child", choices=("numpy", "torch"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.quick, args.repeats)))
        return None
    report = _bench_module("_blas_report")
    for info in report.numpy_blas_report():
        print("NumPy's BLAS:", report.describe(info))
    print(f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset: detected)')}")
    rounds = []
    for _ in range(args.rounds):
        rounds.append(
            {lib: _run_child(lib, args.quick, args.repeats) for lib in ("numpy", "torch")}
        )
    text = table(rounds, args.quick)
    print(text)
    return text


if __name__ == "__main__":
    main()
