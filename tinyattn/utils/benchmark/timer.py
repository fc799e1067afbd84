"""``Timer``: torch's benchmark timer for Python statements, on ``time.perf_counter``.

>>> from tinyattn.utils import benchmark
>>> t = benchmark.Timer(stmt="x * 2", globals={"x": 3}, label="double")
>>> m = t.timeit(1000)
>>> m.number_per_run, len(m.times)
(1000, 1)

``blocked_autorange`` picks a block size (runs per measurement) that makes the
timer's own overhead negligible, then measures blocks until ``min_run_time``
seconds have been spent; ``adaptive_autorange`` goes on until the interquartile
range is below ``threshold`` times the median (or ``max_run_time`` is reached).
"""

from __future__ import annotations

import contextlib
import sys
import time
import timeit as _timeit
from collections.abc import Callable, Iterator

import numpy as np

from ...foundations.type_names import type_name
from .common import Measurement, TaskSpec

__all__ = ["Timer", "Language"]


class Language:
    """torch's ``Language`` enum: only Python statements are timed here."""

    PYTHON = 0
    CPP = 1


@contextlib.contextmanager
def _threads(num_threads: int) -> Iterator[None]:
    """numba's thread count set to ``num_threads`` for the block (if numba is in use)."""
    numba = sys.modules.get("numba")
    if numba is None:
        yield
        return
    before = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(num_threads), numba.config.NUMBA_NUM_THREADS)))
    try:
        yield
    finally:
        numba.set_num_threads(before)


class Timer:
    """Times ``stmt`` after running ``setup`` once, in a namespace copied from ``globals``.

    Parameters
    ----------
    stmt, setup : str
        Python code; ``setup`` runs once before any timing.
    globals : dict, optional
        Names the statement uses (copied, as in torch).
    label, sub_label, description, env : str, optional
        Shown in the printout (and used by ``Compare`` to build its table).
    num_threads : int
        Threads for numba's parallel kernels while timing (torch: intra-op threads).
    timer : callable
        The clock (default ``time.perf_counter``).
    """

    def __init__(
        self,
        stmt: str = "pass",
        setup: str = "pass",
        global_setup: str = "",
        timer: Callable[[], float] = time.perf_counter,
        globals: dict | None = None,
        label: str | None = None,
        sub_label: str | None = None,
        description: str | None = None,
        env: str | None = None,
        num_threads: int = 1,
        language: int | str = Language.PYTHON,
    ) -> None:
        if not isinstance(stmt, str):
            raise ValueError(f"Timer(): argument 'stmt' must be a str, got {type_name(stmt)}")
        if language not in (Language.PYTHON, "py", "python"):
            raise ValueError(
                f"Timer(): only Python statements can be timed, got language={language!r}"
            )
        if not isinstance(num_threads, int) or num_threads < 1:
            raise ValueError(f"Timer(): num_threads must be a positive int, got {num_threads!r}")
        self._globals = dict(globals or {})
        self._task_spec = TaskSpec(
            stmt=stmt,
            setup=setup,
            global_setup=global_setup,
            label=label,
            sub_label=sub_label,
            description=description,
            env=env,
            num_threads=num_threads,
        )
        self._timer = _timeit.Timer(
            stmt=stmt, setup=setup or "pass", timer=timer, globals=self._globals
        )

    def _timeit(self, number: int) -> float:
        # a clock call costs tens of ns: no real statement takes < 1 ns (and no division by 0)
        return max(self._timer.timeit(number), 1e-9)

    def timeit(self, number: int = 1000000) -> Measurement:
        """Run the statement ``number`` times (after a short warmup): one measurement."""
        with _threads(self._task_spec.num_threads):
            self._timeit(max(number // 100, 2))  # warmup (numba compiles, caches fill)
            return Measurement(number, [self._timeit(number)], self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback=None) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _block_size(self, min_run_time: float) -> int:
        """Runs per measurement: grown 10x until the clock's overhead is < 0.01% of a block
        and a block takes min_run_time / 1000 (or one block exceeds min_run_time)."""
        overhead = float(np.median([self._timeit(0) for _ in range(5)]))
        number = 1
        while True:
            taken = self._timeit(number)
            if overhead / taken <= 1e-4 and taken >= min_run_time / 1000:
                return number
            if taken > min_run_time or number * 10 > 2147483647:
                return number
            number *= 10

    def _measure(self, number, stop, min_run_time, max_run_time=None, callback=None) -> list:
        times: list[float] = []
        total, can_stop = 0.0, False
        while total < min_run_time or not can_stop:
            spent = self._timeit(number)
            times.append(spent)
            total += spent
            if callback is not None:
                callback(number, spent)
            can_stop = stop(times)
            if max_run_time and total > max_run_time:
                break
        return times

    def blocked_autorange(self, callback=None, min_run_time: float = 0.2) -> Measurement:
        """Blocks of a fixed size (see ``_block_size``) until ``min_run_time`` seconds are spent."""
        with _threads(self._task_spec.num_threads):
            number = self._block_size(min_run_time)
            times = self._measure(number, lambda times: True, min_run_time, callback=callback)
        return Measurement(number, times, self._task_spec)

    def adaptive_autorange(
        self,
        threshold: float = 0.1,
        *,
        min_run_time: float = 0.01,
        max_run_time: float = 10.0,
        callback=None,
    ) -> Measurement:
        """Blocks until more than 3 are taken and ``iqr / median < threshold`` (or
        ``max_run_time`` seconds are spent)."""
        with _threads(self._task_spec.num_threads):
            number = self._block_size(0.05)

            def stop(times: list[float]) -> bool:
                if len(times) <= 3:
                    return False
                return Measurement(number, times, self._task_spec).meets_confidence(threshold)

            times = self._measure(number, stop, min_run_time, max_run_time, callback)
        return Measurement(number, times, self._task_spec)
