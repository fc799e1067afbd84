"""``python -m tinyattn``: a self-check (versions, a gradcheck of softmax attention, and the
fused attention kernel, through numba's disk cache, against its NumPy twin).

Later subcommands (``demo``, ``generate``) are dispatched from here too.
"""

from __future__ import annotations

import argparse
import platform
import sys


def selfcheck() -> int:
    """Print versions and gradcheck softmax attention in float64; return an exit code."""
    import numpy as np

    import tinyattn
    from tinyattn.autograd.gradcheck import GradcheckError, gradcheck

    try:
        from importlib.metadata import version

        numba_version = version("numba")
    except Exception:
        numba_version = "not installed"
    print(f"tinyattn {tinyattn.__version__}")
    print(f"python   {platform.python_version()} ({platform.machine()})")
    print(f"numpy    {np.__version__}")
    print(f"numba    {numba_version}")
    print_blas()

    rng = np.random.default_rng(0)

    def leaf(*shape):
        return tinyattn.tensor(rng.standard_normal(shape), requires_grad=True)

    q, k, v = leaf(2, 3, 4), leaf(2, 5, 4), leaf(2, 5, 3)

    def attention(q, k, v):
        scores = q @ k.transpose(-2, -1) / 4**0.5
        return tinyattn.softmax(scores, dim=-1) @ v

    n = sum(t.numel() for t in (q, k, v))
    try:
        gradcheck(attention, (q, k, v))
        status = "PASS"
    except GradcheckError as err:
        status = f"FAIL\n  {err}"
    print(f"gradcheck softmax(q k^T / sqrt(d)) v, float64, {n} input elements: {status}")
    kernel_status = kernel_check(rng)
    return 0 if status == "PASS" and kernel_status.startswith("PASS") else 1


def kernel_check(rng) -> str:
    """Run the fused attention kernel (loaded from numba's disk cache, or compiled and
    saved there) against its NumPy twin; print and return the outcome."""
    import warnings

    import numpy as np

    from tinyattn import kernels
    from tinyattn.kernels import reference

    q, k, v = (rng.standard_normal((1, 2, 5, 4)) for _ in range(3))
    name = kernels.backend()
    if name == "numpy":
        status = "PASS (TINYATTN_KERNELS=numpy: the NumPy twins run, no kernel to check)"
        print(f"fused attention kernel: {status}")
        return status
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out, _ = kernels.flash_attention_forward(q, k, v)
        expected, _ = reference.flash_attention_forward(q, k, v)
        ok = np.allclose(out, expected, rtol=1e-12, atol=1e-12)
        status = "PASS" if ok else "FAIL (differs from its NumPy twin)"
    except Exception as error:
        caught, status = [], f"FAIL\n  {type(error).__name__}: {error}"
    from tinyattn.kernels import _numba_flash

    cache = getattr(_numba_flash._forward_kernel._cache, "_cache_path", None)
    where = f"cached in {cache}" if cache else "compiled in memory, not cached"
    print(f"fused attention kernel ({name}, {where}): {status}")
    for warning in caught:
        print(f"  warning: {warning.message}")
    return status


def print_blas(libraries: list[dict] | None = None, cpu: int | None = None, env=None) -> None:
    """Print NumPy's BLAS (library, core type, threads) and warn when its kernels are older
    than the processor supports (e.g. OPENBLAS_CORETYPE=Haswell on an AVX-512 processor).

    By default this process's libraries, processor and environment are read."""
    import os

    from tinyattn.bench._blas_report import cpu_tier, numpy_blas_report, numpy_blas_summary

    line, warning = numpy_blas_summary(
        numpy_blas_report() if libraries is None else libraries,
        cpu_tier() if cpu is None else cpu,
        os.environ if env is None else env,
    )
    print(f"blas     {line} (NumPy's matrix products)")
    if warning:
        print(f"WARNING: {warning}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tinyattn", description=__doc__)
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("selfcheck", help="versions and an attention gradcheck (the default)")
    demo = sub.add_parser("demo", help="train a small attention model and look inside it")
    demo.add_argument("--task", default="reverse", help="reverse (default), copy or rotate")
    demo.add_argument("--steps", type=int, default=300)
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--out", default=None, help="directory for attention.png (needs matplotlib)")
    gen = sub.add_parser("generate", help="generate text with GPT-2 weights (byte-level tokens)")
    gen.add_argument("--weights", required=True, help="model.safetensors or a torch .pt/.bin")
    gen.add_argument("--prompt", required=True)
    gen.add_argument("--tokens", type=int, default=32, help="new tokens to generate")
    gen.add_argument("--temperature", type=float, default=0.0, help="0: greedy (default)")
    gen.add_argument("--n-head", type=int, default=None, help="default: config.json or n_embd/64")
    from .explain import cli as explain_cli

    explain_cli.add_arguments(
        sub.add_parser("explain", help="one HTML page of a script's backward pass")
    )
    args = parser.parse_args(argv)
    if args.command in (None, "selfcheck"):
        return selfcheck()
    if args.command == "demo":
        from .demo import run

        return run(args.task, args.steps, args.seed, args.out)
    if args.command == "generate":
        from .models.gpt2 import run_generate

        return run_generate(args.weights, args.prompt, args.tokens, args.temperature, args.n_head)
    if args.command == "explain":
        return explain_cli.run(args)
    parser.error(f"unknown command {args.command!r}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
