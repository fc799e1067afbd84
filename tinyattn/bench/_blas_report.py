"""Which BLAS kernels run: the libraries, OpenBLAS core types and thread counts in a process.

Matrix products run in the BLAS that each framework loads: NumPy's bundled OpenBLAS for
tinyattn, MKL for torch's x86 wheels. OpenBLAS picks its kernels ("core type") for the
processor at load time, unless ``OPENBLAS_CORETYPE`` names one: some machines set
``OPENBLAS_CORETYPE=Haswell`` (and ``OPENBLAS_L2_SIZE``) because older OpenBLAS builds
crashed on their processors, and that forces AVX2 kernels on an AVX-512 processor.

The report comes from ``threadpoolctl`` where it is installed (a benchmark extra, never a
runtime dependency); without it, the OpenBLAS libraries mapped into the process are asked
directly through ``ctypes`` (``openblas_get_corename`` and friends, under the symbol
prefixes NumPy's wheels use).

This file imports neither tinyattn nor torch at module level: the benchmark's child
processes load it by path, so a torch-only process stays free of tinyattn.
"""

from __future__ import annotations

import ctypes
import os
import re
from collections.abc import Iterable, Mapping

# The widest vector instructions each OpenBLAS x86 core type's kernels use:
# 1 = SSE, 2 = AVX, 3 = AVX2 + FMA, 4 = AVX-512. Names not listed give no verdict.
TIER_NAMES = {1: "SSE", 2: "AVX", 3: "AVX2", 4: "AVX-512"}
OPENBLAS_CORE_TIERS = {
    **dict.fromkeys(("skylakex", "cooperlake", "sapphirerapids"), 4),
    **dict.fromkeys(("haswell", "zen", "excavator"), 3),
    **dict.fromkeys(("sandybridge", "bulldozer", "piledriver", "steamroller"), 2),
    **dict.fromkeys(
        (
            "prescott",
            "core2",
            "penryn",
            "dunnington",
            "nehalem",
            "atom",
            "opteron",
            "opteron_sse3",
            "barcelona",
            "bobcat",
            "nano",
        ),
        1,
    ),
}
OPENBLAS_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
_AVX512_FLAGS = ("avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl")


# --------------------------------------------------------------------------- processor


def cpu_tier(
    numpy_features: Mapping[str, bool] | None = None, cpuinfo_flags: Iterable[str] | None = None
) -> int:
    """The widest vector tier the processor supports (see ``TIER_NAMES``; 0: unknown).

    From NumPy's runtime CPU features (``AVX512_SKX`` is the SkylakeX set) when given, else
    from ``/proc/cpuinfo``-style flags. With neither given, this process's are read.
    """
    if numpy_features is None and cpuinfo_flags is None:
        numpy_features = _numpy_cpu_features()
        if numpy_features is None:
            cpuinfo_flags = _cpuinfo_flags()
    if numpy_features is not None:
        has = {name for name, present in numpy_features.items() if present}
        checks = [(4, {"AVX512_SKX"}), (3, {"AVX2", "FMA3"}), (2, {"AVX"}), (1, {"SSE2"})]
    else:
        has = set(cpuinfo_flags or ())
        checks = [(4, set(_AVX512_FLAGS)), (3, {"avx2", "fma"}), (2, {"avx"}), (1, {"sse2"})]
    return next((tier for tier, needed in checks if needed <= has), 0)


def _numpy_cpu_features() -> Mapping[str, bool] | None:
    try:
        from numpy._core._multiarray_umath import __cpu_features__  # NumPy 2
    except ImportError:
        try:
            from numpy.core._multiarray_umath import __cpu_features__  # NumPy 1.x
        except ImportError:
            return None
    return __cpu_features__


def _cpuinfo_flags(path: str = "/proc/cpuinfo") -> set[str]:
    try:
        with open(path) as cpuinfo:
            for line in cpuinfo:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def core_tier(core: str | None) -> int | None:
    """The vector tier of an OpenBLAS core type's kernels; None for a name not in the table."""
    return OPENBLAS_CORE_TIERS.get(core.lower()) if core else None


# --------------------------------------------------------------------------- libraries


def blas_libraries(use_threadpoolctl: bool = True) -> list[dict]:
    """The BLAS / OpenMP libraries loaded in this process, one dict each: ``internal_api``
    (openblas, mkl, openmp, ...), ``version``, ``architecture`` (the core type),
    ``num_threads``, ``filepath``, and ``source`` (threadpoolctl or ctypes)."""
    if use_threadpoolctl:
        try:
            import threadpoolctl
        except ImportError:
            pass
        else:
            return [dict(info, source="threadpoolctl") for info in threadpoolctl.threadpool_info()]
    return [info for path in _mapped_openblas_paths() if (info := openblas_via_ctypes(path))]


def _mapped_openblas_paths() -> list[str]:
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower()}
    except OSError:  # not Linux: NumPy's wheel keeps it beside the package
        import glob

        import numpy

        root = os.path.dirname(numpy.__file__)
        paths = set(glob.glob(root + ".libs/*openblas*") + glob.glob(root + "/.dylibs/*openblas*"))
    return sorted(p for p in paths if os.path.isfile(p))


def openblas_via_ctypes(path: str) -> dict | None:
    """Ask one OpenBLAS library for its core type, configuration and thread count."""
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        return None
    for prefix in ("scipy_openblas_", "openblas_"):
        for suffix in ("64_", ""):
            corename = getattr(lib, f"{prefix}get_corename{suffix}", None)
            if corename is None:
                continue
            config = getattr(lib, f"{prefix}get_config{suffix}")
            threads = getattr(lib, f"{prefix}get_num_threads{suffix}")
            corename.restype = config.restype = ctypes.c_char_p
            threads.restype = ctypes.c_int
            text = config().decode(errors="replace").split()
            return dict(
                user_api="blas",
                internal_api="openblas",
                version=text[1] if len(text) > 1 else None,
                architecture=corename().decode(errors="replace"),
                num_threads=int(threads()),
                filepath=path,
                source="ctypes",
            )
    return None


def numpy_blas_report(use_threadpoolctl: bool = True) -> list[dict]:
    """The BLAS that NumPy's products run in (imports NumPy first, which loads it)."""
    import numpy  # noqa: F401

    return [i for i in blas_libraries(use_threadpoolctl) if i.get("user_api") == "blas"]


def torch_blas_report() -> dict:
    """torch's BLAS, the CPU capability its own kernels use, and its thread count."""
    import torch

    config = torch.__config__.show()
    blas = next(
        (
            part.split("=", 1)[1]
            for part in config.replace(",", " ").split()
            if "BLAS_INFO=" in part
        ),
        "unknown",
    )
    mkl = re.search(r"Math Kernel Library Version ([\w.]+)", config)
    capability = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", None)
    return dict(
        blas=blas,
        version=f"MKL {mkl.group(1)}" if mkl else None,
        cpu_capability=capability() if capability else None,
        num_threads=torch.get_num_threads(),
    )


def describe(info: dict) -> str:
    """One line for a library dict of ``blas_libraries``."""
    arch = info.get("architecture")
    return (
        f"{info.get('internal_api')} {info.get('version') or ''}".strip()
        + (f", {arch} kernels" if arch else "")
        + f", {info.get('num_threads')} threads"
    )


# --------------------------------------------------------------------------- the verdict


def stale_core_warning(core: str | None, cpu: int, env: Mapping[str, str]) -> str | None:
    """A warning when OpenBLAS runs ``core`` kernels on a processor of a wider tier ``cpu``.

    ``env`` is the environment to blame (``OPENBLAS_CORETYPE`` forces the core type).
    None when the core is as wide as the processor allows, or either is unknown.
    """
    have = core_tier(core)
    if have is None or cpu == 0 or have >= cpu:
        return None
    lines = [
        f"NumPy's OpenBLAS runs its {core} kernels ({TIER_NAMES[have]}) on a processor that "
        f"supports {TIER_NAMES[cpu]}.",
        "  Matrix products (every Linear layer, every attention product) then "
        + _why_slower(have, cpu)
        + ": a float32 matrix product typically runs 1.5 to 2 times slower than with the "
        "processor's own kernels.",
    ]
    forced = env.get("OPENBLAS_CORETYPE")
    if forced:
        names = " and ".join(name for name in OPENBLAS_ENV if name in env)
        lines.append(
            f"  OPENBLAS_CORETYPE={forced} in the environment forces this. It is set on some "
            "machines because older OpenBLAS builds crashed on them; with a current NumPy, "
            f"unset {names} (e.g. `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python ...`) "
            "to let OpenBLAS pick the processor's own kernels."
        )
    return "\n".join(lines)


def _why_slower(have: int, cpu: int) -> str:
    bits = {1: 128, 2: 256, 3: 256, 4: 512}
    if bits[cpu] > bits[have]:
        return (
            f"use {bits[have]}-bit vectors where the processor has {bits[cpu]}-bit ones, "
            f"{bits[cpu] // bits[have]}x fewer multiply-adds per instruction"
        )
    return "use a multiply and an add where the processor has one fused instruction (FMA)"


def numpy_blas_summary(
    libraries: list[dict], cpu: int, env: Mapping[str, str]
) -> tuple[str, str | None]:
    """(one line naming NumPy's BLAS libraries, the first ``stale_core_warning`` or None)."""
    line = "; ".join(describe(info) for info in libraries) or "not found"
    cores = [info.get("architecture") for info in libraries]
    warnings = [w for core in cores if (w := stale_core_warning(core, cpu, env))]
    return line, (warnings[0] if warnings else None)
