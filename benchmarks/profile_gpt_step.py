"""Where a GPT training step spends its time: per-op-type forward/backward shares and cProfile.

Runs the benchmark's ``train`` case (``tinyattn.bench._cases.gpt_step``: pre-LayerNorm GPT,
causal SDPA, GELU MLP, AdamW) and breaks one step into

* forward time per autograd Function (``Function.apply`` wrapped, inclusive of its
  Python overhead: unwrapping, node creation, version bookkeeping),
* backward time per node (``tinyattn.autograd.trace``),
* the optimizer step and ``zero_grad``,
* what is left: Python between ops (module calls, views, the engine's own loop).

Op names are grouped into categories (GEMM, attention, LayerNorm, ...). Times are
medians over ``--steps`` steps after ``--warmup``; shares are of the median step.
CPU time is reported too (the machine may be shared).

    python benchmarks/profile_gpt_step.py [--steps 10] [--cprofile] [--small]
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import io
import pstats
import statistics
import time

import tinyattn
from tinyattn.autograd import function as _function
from tinyattn.bench._cases import gpt_step

CATEGORIES = [  # (category, substrings of Function / node names), first match wins
    ("GEMM (linear/matmul)", ("linear", "matmul", "mm", "addmm", "bmm", "einsum")),
    ("attention (SDPA)", ("attention", "sdpa", "flash")),
    ("LayerNorm", ("layernorm", "layer_norm")),
    ("GELU", ("gelu",)),
    ("softmax/cross-entropy", ("cross", "softmax", "nll", "logsumexp")),
    ("embedding", ("embedding", "indexselect", "index_select")),
    ("dropout", ("dropout",)),
    ("residual/elementwise add", ("add",)),
    (
        "views/shape (view, split, transpose, contiguous)",
        (
            "view",
            "reshape",
            "split",
            "transpose",
            "permute",
            "contiguous",
            "clone",
            "narrow",
            "slice",
            "getitem",
            "expand",
            "unsqueeze",
            "squeeze",
            "select",
            "chunk",
        ),
    ),
]


def category(name: str) -> str:
    low = name.lower()
    for cat, keys in CATEGORIES:
        if any(k in low for k in keys):
            return cat
    return f"other ({name})"


class ForwardTimer:
    """Wrap ``Function.apply`` (a classmethod) to time each op's forward, by class name."""

    def __init__(self) -> None:
        self.times: collections.Counter = collections.Counter()
        self.counts: collections.Counter = collections.Counter()
        self.depth = 0

    def __enter__(self):
        self.original = _function.Function.__dict__["apply"]
        raw = self.original.__func__
        timer = self

        def apply(cls, *args, **kwargs):
            if timer.depth:  # an op calling another op: charge the outer one only
                return raw(cls, *args, **kwargs)
            timer.depth += 1
            t0 = time.perf_counter()
            try:
                return raw(cls, *args, **kwargs)
            finally:
                timer.times[cls.__name__] += time.perf_counter() - t0
                timer.counts[cls.__name__] += 1
                timer.depth -= 1

        _function.Function.apply = classmethod(apply)
        return self

    def __exit__(self, *exc) -> None:
        _function.Function.apply = self.original


def build(config: dict):
    """The bench case's model, split into phases so each can be timed."""
    run = gpt_step(**config)(tinyattn)
    # the case's closure holds model, optimizer, idx, targets: take them back out
    cells = dict(zip(run.__code__.co_freevars, (c.cell_contents for c in run.__closure__)))
    return run, cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--cprofile", action="store_true", help="also print cProfile's top 30")
    parser.add_argument("--small", action="store_true", help="tiny model (smoke test)")
    args = parser.parse_args()
    config = (
        dict(n_layer=1, d=32, n_head=2, T=16, B=2, vocab=64)
        if args.small
        else dict(n_layer=4, d=256, n_head=8, T=128, B=8, vocab=256)
    )
    run, cells = build(config)
    model, optimizer, idx, targets = (cells[k] for k in ("model", "optimizer", "idx", "targets"))
    F, vocab = tinyattn.nn.functional, config["vocab"]
    for _ in range(args.warmup):
        run()

    phases = collections.defaultdict(list)
    cpu = []
    fwd_ops = collections.defaultdict(list)
    bwd_ops = collections.defaultdict(list)
    phases_cpu = collections.defaultdict(list)
    for _ in range(args.steps):
        c0, t0 = time.process_time(), time.perf_counter()
        with ForwardTimer() as ft:
            logits = model(idx)
            loss = F.cross_entropy(logits.view(-1, vocab), targets.reshape(-1))
        c1, t1 = time.process_time(), time.perf_counter()
        optimizer.zero_grad()
        c2, t2 = time.process_time(), time.perf_counter()
        with tinyattn.autograd.trace() as tr:
            loss.backward()
        c3, t3 = time.process_time(), time.perf_counter()
        optimizer.step()
        c4, t4 = time.process_time(), time.perf_counter()
        cpu.append(c4 - c0)
        for name, value, value_cpu in (
            ("forward", t1 - t0, c1 - c0),
            ("zero_grad", t2 - t1, c2 - c1),
            ("backward", t3 - t2, c3 - c2),
            ("optimizer", t4 - t3, c4 - c3),
            ("step", t4 - t0, c4 - c0),
        ):
            phases[name].append(value)
            phases_cpu[name].append(value_cpu)
        per_fwd = collections.Counter()
        for name, sec in ft.times.items():
            per_fwd[category(name)] += sec
        per_bwd = collections.Counter()
        for r in tr.records:
            per_bwd[category(r["op"])] += r["seconds"]
        for cat in set(per_fwd) | set(fwd_ops):
            fwd_ops[cat].append(per_fwd.get(cat, 0.0))
        for cat in set(per_bwd) | set(bwd_ops):
            bwd_ops[cat].append(per_bwd.get(cat, 0.0))
        last_counts = (ft.counts, collections.Counter(r["op"] for r in tr.records))

    med = {k: statistics.median(v) for k, v in phases.items()}
    step = med["step"]
    print(
        f"config {config}; {args.steps} steps; median step {step * 1e3:.1f} ms wall, "
        f"{statistics.median(cpu) * 1e3:.1f} ms CPU"
    )
    med_cpu = {k: statistics.median(v) for k, v in phases_cpu.items()}
    print(f"\n{'phase':<12}{'ms':>9}{'share':>8}{'CPU ms':>9}{'CPU share':>10}")
    for name in ("forward", "zero_grad", "backward", "optimizer"):
        print(
            f"{name:<12}{med[name] * 1e3:>9.2f}{med[name] / step:>8.1%}"
            f"{med_cpu[name] * 1e3:>9.2f}{med_cpu[name] / med_cpu['step']:>10.1%}"
        )

    rows = []
    for cat in set(fwd_ops) | set(bwd_ops):
        f = statistics.median(fwd_ops.get(cat, [0.0]))
        b = statistics.median(bwd_ops.get(cat, [0.0]))
        rows.append((f + b, cat, f, b))
    fsum = sum(statistics.median(v) for v in fwd_ops.values())
    bsum = sum(statistics.median(v) for v in bwd_ops.values())
    rows.append((med["optimizer"], "AdamW step", 0.0, 0.0))
    rows.append((med["zero_grad"], "zero_grad", 0.0, 0.0))
    rows.append(
        (
            max(med["forward"] - fsum, 0) + max(med["backward"] - bsum, 0),
            "Python between ops (modules, engine loop)",
            max(med["forward"] - fsum, 0),
            max(med["backward"] - bsum, 0),
        )
    )
    print(f"\n{'category':<50}{'fwd ms':>8}{'bwd ms':>8}{'total':>8}{'share':>8}")
    for total, cat, f, b in sorted(rows, reverse=True):
        print(f"{cat:<50.50}{f * 1e3:>8.2f}{b * 1e3:>8.2f}{total * 1e3:>8.2f}{total / step:>8.1%}")
    fwd_counts, bwd_counts = last_counts
    n_fwd, n_bwd = sum(fwd_counts.values()), sum(bwd_counts.values())
    print(f"\nops per step: {n_fwd} forward Function calls, {n_bwd} backward nodes")
    print("forward calls by op:", dict(fwd_counts.most_common()))
    print("backward nodes by op:", dict(bwd_counts.most_common()))

    if args.cprofile:
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(args.steps):
            run()
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(30)
        print(out.getvalue())


if __name__ == "__main__":
    main()
