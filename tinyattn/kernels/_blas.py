"""Which BLAS the kernels call on tiles, how they reach it, and its thread count.

Backends, in the order ``blas_backend()`` tries them (``TINYATTN_BLAS`` forces one):

``numpy``
    The OpenBLAS that NumPy's wheels bundle (``numpy.libs/libscipy_openblas64_*``
    on Linux, ``numpy/.dylibs`` on macOS, ``numpy.libs`` on Windows). It exports
    the CBLAS interface with 64-bit integers (ILP64): ``scipy_cblas_sgemm64_``
    (NumPy 2) or ``cblas_sgemm64_`` (NumPy 1.2x wheels). We load it with ctypes
    and give the address of ``sgemm``/``dgemm`` to LLVM under fixed names
    (``tinyattn_cblas_sgemm64`` / ``_dgemm64``, ``llvmlite.binding.add_symbol``):
    the compiled kernels call those names, so they stay cacheable (the address
    is resolved when the cached code is loaded, not baked into it). One library,
    one thread pool: the one NumPy's own ``matmul`` uses.
``scipy``
    ``scipy.linalg.cython_blas`` through numba's ``numba_xxgemm`` helper (what
    ``np.dot`` uses inside numba). Used when NumPy's BLAS is not reachable:
    NumPy built against Accelerate (macOS arm64 wheels of NumPy >= 2.0 for
    macOS >= 14), MKL or a system CBLAS with 32-bit integers (conda, distros).
``loops``
    Plain numba loops (``_numba_tiles._gemm_loops``), always available.

``tile_blas_code()`` is the number the kernels receive (``use_blas`` in their
options): 0 loops, 1 NumPy's CBLAS, 2 scipy.

Thread policy: the kernels are parallel over (batch, head) items and call BLAS
from inside their ``prange``, one small product per tile. OpenBLAS is a
pthreads build; left alone it would start its own threads from each numba
thread for tiles above 4 * 65536 multiply-adds (oversubscription, and its
level-3 lock serialises the callers). ``single_threaded_blas()`` sets the
library the kernels use to one thread for the duration of a kernel call and
restores the previous count afterwards (re-entrant, counted across Python
threads). A NumPy ``matmul`` in another Python thread during that window runs
single-threaded too.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import glob
import importlib.util
import os
import sys
import threading
from collections.abc import Iterator

BACKENDS = ("numpy", "scipy", "loops")
CODES = {"loops": 0, "numpy": 1, "scipy": 2}
SYMBOLS = {"float32": "tinyattn_cblas_sgemm64", "float64": "tinyattn_cblas_dgemm64"}
_GEMM_NAMES = {  # (sgemm, dgemm, set_num_threads, get_num_threads) by library generation
    "scipy_openblas64": (
        "scipy_cblas_sgemm64_",
        "scipy_cblas_dgemm64_",
        "scipy_openblas_set_num_threads64_",
        "scipy_openblas_get_num_threads64_",
    ),
    "openblas64": (
        "cblas_sgemm64_",
        "cblas_dgemm64_",
        "openblas_set_num_threads64_",
        "openblas_get_num_threads64_",
    ),
}

_lock = threading.Lock()
_depth = 0
_saved_threads = 0


# --------------------------------------------------------------------------- discovery


def _numpy_library_candidates() -> list[str]:
    """Paths of the OpenBLAS shared libraries shipped inside the installed NumPy wheel."""
    import numpy

    package = os.path.dirname(numpy.__file__)
    patterns = [
        os.path.join(package + ".libs", "*openblas*"),  # Linux (auditwheel), Windows (delvewheel)
        os.path.join(package, ".dylibs", "*openblas*"),  # macOS (delocate)
    ]
    return sorted(path for pattern in patterns for path in glob.glob(pattern))


@functools.cache
def numpy_blas() -> dict | None:
    """NumPy's bundled ILP64 CBLAS as {path, sgemm, dgemm, set_threads, get_threads},
    or None where it is not reachable (see the module docstring). Loaded once."""
    if os.environ.get("TINYATTN_NO_NUMPY_BLAS"):  # lets tests see the fallback
        return None
    import numpy  # noqa: F401  (maps the library first, so CDLL finds it already loaded)

    for path in _numpy_library_candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for sgemm, dgemm, setter, getter in _GEMM_NAMES.values():
            if not all(hasattr(lib, name) for name in (sgemm, dgemm, setter, getter)):
                continue
            set_threads, get_threads = getattr(lib, setter), getattr(lib, getter)
            set_threads.argtypes, set_threads.restype = [ctypes.c_int], None
            get_threads.argtypes, get_threads.restype = [], ctypes.c_int
            address = {
                dtype: ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
                for dtype, name in (("float32", sgemm), ("float64", dgemm))
            }
            return dict(
                path=path,
                library=lib,
                address=address,
                set_threads=set_threads,
                get_threads=get_threads,
            )
    return None


def scipy_available() -> bool:
    """True if ``scipy.linalg.cython_blas`` can be imported (checked at each call)."""
    try:
        return importlib.util.find_spec("scipy.linalg.cython_blas") is not None
    except ImportError:  # scipy missing, or a scipy that fails to import
        return False


def blas_backend() -> str:
    """The BLAS the fused kernels call on tiles now: ``"numpy"``, ``"scipy"`` or ``"loops"``.

    ``TINYATTN_BLAS`` (read at each call) may name one; an unavailable choice
    raises. Unset (or ``auto``): NumPy's bundled BLAS, else scipy's, else loops.
    """
    wanted = os.environ.get("TINYATTN_BLAS", "auto").strip().lower() or "auto"
    if wanted == "auto" and numpy_blas() is not None:
        return "numpy"  # the common case, first: this runs at every attention call
    # Each check runs only when asked: finding scipy.linalg imports scipy (~0.3 s on
    # a first kernel call that then uses NumPy's BLAS anyway).
    available = {
        "numpy": lambda: numpy_blas() is not None,
        "scipy": scipy_available,
        "loops": lambda: True,
    }
    if wanted == "auto":
        return next(name for name in BACKENDS if available[name]())
    if wanted not in BACKENDS:
        raise ValueError(f"TINYATTN_BLAS: expected 'auto' or one of {BACKENDS}, got {wanted!r}")
    if not available[wanted]():
        raise RuntimeError(f"TINYATTN_BLAS={wanted!r}, but that BLAS is not reachable here")
    return wanted


def tile_blas_code() -> int:
    """``blas_backend()`` as the integer the kernels branch on (0 loops, 1 numpy, 2 scipy)."""
    return CODES[blas_backend()]


# --------------------------------------------------------------------------- linking


def _unreachable_gemm(*args) -> None:  # pragma: no cover - only a link-time placeholder
    raise RuntimeError("tinyattn: NumPy's BLAS was called but not found")


_PLACEHOLDER = ctypes.CFUNCTYPE(None)(_unreachable_gemm)


@functools.cache
def register_symbols() -> bool:
    """Give LLVM the addresses behind ``SYMBOLS`` (before any kernel is compiled or loaded).

    Without NumPy's BLAS the names point at a placeholder that the kernels never
    call (they branch on ``tile_blas_code()``), so code compiled on one machine
    still links on another. Returns whether NumPy's BLAS is behind them.
    """
    from llvmlite import binding

    found = numpy_blas()
    placeholder = ctypes.cast(_PLACEHOLDER, ctypes.c_void_p).value
    for dtype, symbol in SYMBOLS.items():
        binding.add_symbol(symbol, found["address"][dtype] if found else placeholder)
    return found is not None


# --------------------------------------------------------------------------- threads


@functools.cache
def _scipy_thread_functions() -> tuple | None:
    """(get_num_threads, set_num_threads) of the OpenBLAS that scipy loaded, or None."""
    import scipy.linalg.cython_blas  # noqa: F401  (maps the library into the process)

    if not sys.platform.startswith("linux"):
        return None
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower()}
    except OSError:
        return None
    for path in sorted(p for p in paths if "scipy" in p and "numpy" not in p):
        lib = ctypes.CDLL(path)
        for prefix in ("scipy_openblas", "openblas"):
            getter = getattr(lib, f"{prefix}_get_num_threads", None)
            setter = getattr(lib, f"{prefix}_set_num_threads", None)
            if getter is not None and setter is not None:
                getter.restype = ctypes.c_int
                setter.argtypes = [ctypes.c_int]
                return getter, setter
    return None


def _thread_functions(backend: str) -> tuple | None:
    if backend == "numpy":
        found = numpy_blas()
        return (found["get_threads"], found["set_threads"]) if found else None
    if backend == "scipy":
        return _scipy_thread_functions()
    return None


@contextlib.contextmanager
def single_threaded_blas(backend: str | None = None) -> Iterator[None]:
    """Run the body with the kernels' BLAS (``blas_backend()``) at one thread (re-entrant)."""
    global _depth, _saved_threads
    functions = _thread_functions(backend or blas_backend())
    if functions is None:
        yield
        return
    get_threads, set_threads = functions
    with _lock:
        if _depth == 0:
            _saved_threads = get_threads()
            set_threads(1)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                set_threads(_saved_threads)
