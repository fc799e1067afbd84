"""How tinyattn's parallel kernels share the process: threading layer, lock, BLAS threads.

Policy (every parallel numba kernel is entered through ``kernel_launch``):

Threading layer
    numba's own choice is kept (``NUMBA_THREADING_LAYER`` or numba's default
    order tbb > omp > workqueue), because it is process-wide and may be the
    user's. ``tbb`` and ``omp`` may be entered from several Python threads at
    once. ``workqueue`` (what numba falls back to without OpenMP and TBB) may
    not: two concurrent launches abort the process (SIGABRT, "Numba workqueue
    threading layer is terminating: Concurrent access has been detected").
    So launches take a process-wide lock unless the layer in use is known to
    be thread-safe. Before the first parallel
    launch of the process numba cannot tell the layer; those launches take the
    lock too.
Spin and wait
    numba's ``omp`` layer runs on GNU OpenMP, whose idle workers spin for
    GOMP_SPINCOUNT polls after each parallel region (300,000 by default, about
    a millisecond or more) before they sleep; on a small machine that spinning
    slowed a NumPy product right after a kernel by 1.16-1.25x. ``tinyattn``
    sets ``GOMP_SPINCOUNT=10000`` (if unset) when imported: a kernel is one
    coarse parallel region, so it loses nothing by its workers sleeping sooner.
    tbb's workers spin briefly and sleep; workqueue's sleep at once. NumPy's
    OpenBLAS keeps its idle threads spinning 2**28 cycles (~0.1 s) by default;
    ``tinyattn`` lowers that to 2**20 cycles (``OPENBLAS_THREAD_TIMEOUT=20``).
    Both are environment variables read when the library loads, so they apply
    when tinyattn is imported before NumPy, torch and the first kernel.
BLAS threads
    Inside a kernel the tile products run single-threaded (one parallel level:
    numba's threads); ``_blas.single_threaded_blas`` sets the library to one
    thread for the launch and restores its count afterwards.

``python -m tinyattn.bench --suite interference`` measures the result: a torch
or NumPy product right after a tinyattn kernel against the same product in a
fresh process.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

THREAD_SAFE_LAYERS = frozenset({"tbb", "omp"})

_launch_lock = threading.RLock()


def threading_layer() -> str | None:
    """numba's threading layer in this process, or None before the first parallel launch."""
    import numba

    try:
        return numba.threading_layer()
    except ValueError:
        return None


def needs_lock() -> bool:
    """Whether concurrent launches must be serialised (layer not known to be thread-safe)."""
    return threading_layer() not in THREAD_SAFE_LAYERS


@contextlib.contextmanager
def kernel_launch(blas: bool = False) -> Iterator[None]:
    """Context for one parallel kernel launch: serialised if the layer needs it, and with
    the kernels' BLAS held at one thread when ``blas`` (the kernel calls BLAS on tiles)."""
    lock = _launch_lock if needs_lock() else contextlib.nullcontext()
    with lock:
        if not blas:
            yield
            return
        from ._blas import single_threaded_blas

        with single_threaded_blas():
            yield


def launch_sized(kernel, size: int, parallel_min: int, *args) -> None:
    """``kernel(*args)`` for a parallel kernel that has no serial twin: on numba's threads
    from ``parallel_min`` work items, below on this thread alone (numba's thread count set
    to 1 for the call, then restored), since waking a second thread costs more than it saves."""
    import numba

    with kernel_launch():
        if size >= parallel_min:
            kernel(*args)
            return
        threads = numba.get_num_threads()
        numba.set_num_threads(1)
        try:
            kernel(*args)
        finally:
            numba.set_num_threads(threads)
