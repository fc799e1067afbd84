"""Whether the kernels may call BLAS on tiles, and keeping that BLAS single-threaded.

numba's ``np.dot`` (and our ``gemm`` intrinsic, which goes through the same
``numba_xxgemm`` helper) calls the ``sgemm``/``dgemm`` that scipy exports in
``scipy.linalg.cython_blas``; without scipy that call aborts the process, so
the caller checks ``scipy_available()`` at call time and otherwise selects the
pure-loop tile products.

The kernels call BLAS from inside a ``prange`` over (batch, head) work items,
with one BLAS call per tile. scipy's OpenBLAS is a pthreads build: for a tile
product with m * n * k above 4 * 65536 it would start its own threads from each
numba thread (oversubscription, and its level-3 lock serialises the callers).
``single_threaded_blas()`` sets OpenBLAS to 1 thread for the duration of a
kernel call and restores the previous count afterwards. The library is found
among the shared objects mapped into this process (Linux /proc/self/maps); where
it cannot be found the context manager does nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib.util
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_depth = 0
_saved_threads = 0


def scipy_available() -> bool:
    """True if ``scipy.linalg.cython_blas`` can be imported (checked at each call)."""
    try:
        return importlib.util.find_spec("scipy.linalg.cython_blas") is not None
    except ModuleNotFoundError:
        return False


@functools.cache
def _openblas_thread_functions() -> tuple | None:
    """(get_num_threads, set_num_threads) of the OpenBLAS that scipy loaded, or None."""
    import scipy.linalg.cython_blas  # noqa: F401  (maps the library into the process)

    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower()}
    except OSError:
        return None
    for path in sorted(p for p in paths if "scipy" in p):
        lib = ctypes.CDLL(path)
        for prefix in ("scipy_openblas", "openblas"):
            getter = getattr(lib, f"{prefix}_get_num_threads", None)
            setter = getattr(lib, f"{prefix}_set_num_threads", None)
            if getter is not None and setter is not None:
                getter.restype = ctypes.c_int
                setter.argtypes = [ctypes.c_int]
                return getter, setter
    return None


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Run the body with scipy's OpenBLAS limited to one thread (re-entrant)."""
    global _depth, _saved_threads
    functions = _openblas_thread_functions()
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
