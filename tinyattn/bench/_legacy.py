"""In-process attention report: ``python -m tinyattn.bench --legacy [--quick]``.

Measures, side by side in one process, the tinyattn fused kernel, the tinyattn
NumPy reference twin and (when installed) torch's ``scaled_dot_product_attention``
with ``torch.set_num_threads`` equal to numba's thread count. Times are MEDIANS
over repetitions that alternate between the implementations (so a noisy
neighbour slows all of them alike), after warm-up runs.

Items:
1. SDPA forward and forward+backward, float32, (B, H, L, D) = (8, 8, 512, 64) and
   (2, 8, 2048, 64), causal and not.
2. Peak extra memory of forward+backward at (1, 8, 8192, 64), each implementation
   in a fresh subprocess after a small warm-up call: the tracemalloc peak (NumPy
   allocations; the fused kernel allocates nothing else, its scratch comes from
   NumPy) and the growth of the peak RSS over the call (VmHWM reset through
   /proc/self/clear_refs; any allocator, the only measure available for torch).
   Both include the outputs (out, logsumexp, dq, dk, dv); "workspace" subtracts them.
3. One nn.MultiheadAttention(512, 8) layer forward+backward at (B, L) = (8, 128)
   and (4, 512), with torch's weights loaded; fused (need_weights=False) and not.
4. Cold start in a fresh subprocess with a warm numba cache: ``import tinyattn``
   time and the first fused forward+backward call.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

FULL = dict(
    sdpa_shapes=[(8, 8, 512, 64), (2, 8, 2048, 64)],
    memory_shape=(1, 8, 8192, 64),
    repeats=7,
    mha_shapes=[(8, 128), (4, 512)],
)
QUICK = dict(
    sdpa_shapes=[(2, 4, 256, 64), (1, 4, 1024, 64)],
    memory_shape=(1, 4, 2048, 64),
    repeats=3,
    mha_shapes=[(2, 64)],
)
MIB = 2.0**20


def machine_info() -> dict:
    import numba

    from tinyattn.kernels import backend, blas_backend

    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            cpu = next(line.split(":", 1)[1].strip() for line in cpuinfo if "model name" in line)
    except (OSError, StopIteration):
        pass
    info = dict(
        python=platform.python_version(),
        platform=platform.platform(),
        cpu=cpu,
        logical_cpus=os.cpu_count(),
        numpy=np.__version__,
        numba=numba.__version__,
        numba_threads=numba.get_num_threads(),
        kernels_backend=backend(),
        tile_products=blas_backend() if backend() == "numba" else "n/a",
    )
    try:
        import torch

        info["torch"] = torch.__version__
    except ImportError:
        info["torch"] = None
    return info


def _implementations(causal: bool, backward: bool):
    """name -> (setup(q, k, v, dout) -> callable) for each available implementation."""
    from tinyattn import kernels
    from tinyattn.kernels import reference

    def ours(module):
        def setup(q, k, v, dout):
            def run():
                out, lse = module.flash_attention_forward(q, k, v, causal=causal)
                if backward:
                    module.flash_attention_backward(dout, q, k, v, out, lse, causal=causal)

            return run

        return setup

    impls = {"tinyattn fused": ours(kernels), "tinyattn numpy": ours(reference)}
    try:
        import torch
    except ImportError:
        return impls

    def torch_setup(q, k, v, dout):
        tq, tk, tv = (torch.from_numpy(x).requires_grad_(backward) for x in (q, k, v))
        tdout = torch.from_numpy(dout)
        F = torch.nn.functional

        def run():
            with torch.set_grad_enabled(backward):
                out = F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)
                if backward:
                    out.backward(tdout)

        return run

    impls["torch"] = torch_setup
    return impls


def bench_sdpa(shapes, repeats: int) -> list[dict]:
    """Item 1: median times (ms) and ratios to torch, measured in alternation."""
    rows = []
    for shape in shapes:
        rng = np.random.default_rng(0)
        q, k, v, dout = (rng.standard_normal(shape, dtype=np.float32) for _ in range(4))
        for backward in (False, True):
            for causal in (False, True):
                runs = {
                    name: setup(q, k, v, dout)
                    for name, setup in _implementations(causal, backward).items()
                }
                medians = _alternate(runs, repeats, warmup=3)
                row = dict(
                    shape=shape,
                    causal=causal,
                    pass_="fwd+bwd" if backward else "fwd",
                    median_ms=medians,
                )
                if "torch" in medians:
                    row["ratio_to_torch"] = {n: t / medians["torch"] for n, t in medians.items()}
                rows.append(row)
                print(_format_sdpa_row(row), flush=True)
    return rows


def _format_sdpa_row(row: dict) -> str:
    cells = "  ".join(
        f"{name} {ms:8.1f} ms"
        + (f" ({row['ratio_to_torch'][name]:.2f}x)" if "ratio_to_torch" in row else "")
        for name, ms in row["median_ms"].items()
    )
    kind = "causal" if row["causal"] else "full"
    return f"{str(row['shape']):18s} {kind:6s} {row['pass_']:7s} {cells}"


_MEMORY_CHILD = r"""
import json, sys, tracemalloc
import numpy as np
impl, shape = sys.argv[1], tuple(json.loads(sys.argv[2]))
rng = np.random.default_rng(0)
q, k, v, dout = (rng.standard_normal(shape, dtype=np.float32) for _ in range(4))
if impl == "torch":
    import torch
    import numba
    torch.set_num_threads(numba.get_num_threads())
    tq, tk, tv = (torch.from_numpy(x).requires_grad_() for x in (q, k, v))
    def run():
        out = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv)
        out.backward(torch.from_numpy(dout))
        return out, tq.grad, tk.grad, tv.grad
else:
    from tinyattn import kernels
    from tinyattn.kernels import reference
    module = kernels if impl == "fused" else reference
    small = tuple(shape[:2]) + (64, shape[3])
    s = [np.zeros(small, np.float32)] * 4
    o, l = module.flash_attention_forward(*s[:3])
    module.flash_attention_backward(s[3], *s[:3], o, l)
    def run():
        out, lse = module.flash_attention_forward(q, k, v)
        return (out, lse) + module.flash_attention_backward(dout, q, k, v, out, lse)
def status_bytes(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(field))
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # reset the peak RSS (VmHWM) to the current RSS
rss_before = status_bytes("VmRSS")
tracemalloc.start()
results = run()
_, peak = tracemalloc.get_traced_memory()
tracemalloc.stop()
growth = status_bytes("VmHWM") - rss_before
outputs = sum(int(np.prod(r.shape)) * 4 for r in results)
print(json.dumps(dict(tracemalloc_peak=peak, rss_peak_growth=growth, outputs=outputs)))
"""


def bench_memory(shape) -> dict:
    """Item 2: peak memory of forward+backward, each implementation in a fresh process."""
    impls = ["fused", "torch"]  # the reference would materialise 4+ L x S matrices (GiBs)
    results = {}
    for impl in impls:
        if impl == "torch" and _torch_missing():
            continue
        proc = subprocess.run(
            [sys.executable, "-c", _MEMORY_CHILD, impl, json.dumps(shape)],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            results[impl] = dict(error=proc.stderr.strip().splitlines()[-1:])
            continue
        numbers = json.loads(proc.stdout.strip().splitlines()[-1])
        if impl == "torch":
            numbers["tracemalloc_peak"] = None  # torch's allocator is invisible to tracemalloc
        results[impl] = numbers
        print(_format_memory(impl, numbers), flush=True)
    return dict(
        shape=shape,
        results=results,
        note="reference twin not run: it materialises (B, H, L, L) float32 matrices",
    )


def _format_memory(impl: str, n: dict) -> str:
    outputs = n["outputs"] / MIB
    trace = n["tracemalloc_peak"]
    trace_text = (
        "n/a" if trace is None else f"{trace / MIB:.1f} MiB (workspace {trace / MIB - outputs:.1f})"
    )
    rss = n["rss_peak_growth"] / MIB
    return (
        f"{impl:6s} tracemalloc peak {trace_text}; RSS peak growth {rss:.1f} MiB "
        f"(workspace {rss - outputs:.1f}); outputs {outputs:.1f} MiB"
    )


def _torch_missing() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is None


def _alternate(runs: dict, repeats: int, warmup: int = 2) -> dict:
    """Median ms per implementation, running them in turn so noise hits all alike."""
    for _ in range(warmup):  # warm-up: compile, first-touch, thread pools
        for run in runs.values():
            run()
    times = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return {name: 1e3 * statistics.median(t) for name, t in times.items()}


def _mha_runs(ours, ref, x: np.ndarray, dout: np.ndarray, need_weights: bool) -> dict:
    """The tinyattn and torch layer calls (forward+backward) for one configuration."""
    import tinyattn

    def run_ours():
        xt = tinyattn.tensor(x, requires_grad=True)
        out, _ = ours(xt, xt, xt, need_weights=need_weights)
        out.backward(tinyattn.tensor(dout))

    runs = {"tinyattn": run_ours}
    if ref is not None:
        import torch

        def run_torch():
            xt = torch.from_numpy(x).requires_grad_()
            out, _ = ref(xt, xt, xt, need_weights=need_weights)
            out.backward(torch.from_numpy(dout))

        runs["torch"] = run_torch
    return runs


def bench_mha(shapes, repeats: int, embed_dim: int = 512, num_heads: int = 8) -> list[dict]:
    """Item 3: one nn.MultiheadAttention layer, forward+backward, float32, vs torch.

    Self-attention on (B, L, E) with batch_first=True; torch's weights are loaded
    into the tinyattn layer. ``need_weights=False`` takes the fused kernels,
    ``need_weights=True`` the materialised path that also returns the weights.
    """
    import tinyattn

    try:
        import torch
    except ImportError:
        torch = None
    rows = []
    for batch, length in shapes:
        rng = np.random.default_rng(0)
        x = rng.standard_normal((batch, length, embed_dim), dtype=np.float32)
        dout = rng.standard_normal((batch, length, embed_dim), dtype=np.float32)
        ours = tinyattn.nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)
        ref = None
        if torch is not None:
            ref = torch.nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)
            ours.load_state_dict(ref.state_dict())
        for need_weights in (False, True):
            runs = _mha_runs(ours, ref, x, dout, need_weights)
            medians = _alternate(runs, repeats)
            row = dict(
                shape=(batch, length, embed_dim),
                heads=num_heads,
                need_weights=need_weights,
                median_ms=medians,
            )
            if "torch" in medians:
                row["ratio_to_torch"] = medians["tinyattn"] / medians["torch"]
            rows.append(row)
            ratio = f"  ratio {row['ratio_to_torch']:.2f}" if "ratio_to_torch" in row else ""
            cells = "  ".join(f"{n} {t:8.1f} ms" for n, t in medians.items())
            print(
                f"(B, L, E)={row['shape']!s:16s} need_weights={need_weights!s:5s} {cells}{ratio}",
                flush=True,
            )
    return rows


_COLD_CHILD = r"""
import time
start = time.perf_counter()
import tinyattn
imported = time.perf_counter()
import numpy as np
from tinyattn import kernels
q = np.ones((1, 2, 16, 8), np.float32)
call = time.perf_counter()
out, lse = kernels.flash_attention_forward(q, q, q)
forward = time.perf_counter()
kernels.flash_attention_backward(q, q, q, q, out, lse)
done = time.perf_counter()
print(imported - start, forward - call, done - call)
"""


def bench_cold_start() -> dict:
    """Item 4: fresh subprocesses; the first one warms the numba cache."""
    subprocess.run([sys.executable, "-c", _COLD_CHILD], check=True, capture_output=True)
    samples = []
    for _ in range(3):
        out = subprocess.run(
            [sys.executable, "-c", _COLD_CHILD], check=True, capture_output=True, text=True
        ).stdout
        samples.append([float(x) for x in out.split()])
    import_s, forward_s, both_s = (statistics.median(s[i] for s in samples) for i in range(3))
    print(
        f"import tinyattn {import_s * 1e3:.1f} ms; first forward {forward_s * 1e3:.0f} ms; "
        f"first forward+backward {both_s * 1e3:.0f} ms (median of 3 fresh processes, warm cache)"
    )
    return dict(
        import_tinyattn_s=import_s, first_forward_s=forward_s, first_forward_backward_s=both_s
    )


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(
        prog="python -m tinyattn.bench", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repetitions")
    parser.add_argument("--json", metavar="PATH", help="also write the numbers as JSON")
    options = parser.parse_args(argv)
    sizes = QUICK if options.quick else FULL
    import numba

    try:
        import torch

        torch.set_num_threads(numba.get_num_threads())
    except ImportError:
        pass
    info = machine_info()
    print("machine:", ", ".join(f"{k}={v}" for k, v in info.items()))
    print("\n(1) SDPA float32, median ms (ratio to torch)")
    sdpa = bench_sdpa(sizes["sdpa_shapes"], sizes["repeats"])
    print(f"\n(2) peak memory, forward+backward at {sizes['memory_shape']}")
    memory = bench_memory(sizes["memory_shape"])
    print(
        f"\n(3) nn.MultiheadAttention(512, 8) forward+backward, median ms, at {sizes['mha_shapes']}"
    )
    mha = bench_mha(sizes["mha_shapes"], sizes["repeats"])
    print("\n(4) cold start")
    cold = bench_cold_start()
    report = dict(
        machine=info, sdpa=sdpa, memory=memory, mha=mha, cold_start=cold, quick=options.quick
    )
    if options.json:
        with open(options.json, "w") as f:
            json.dump(report, f, indent=2)
    return report


if __name__ == "__main__":
    main()
