"""``Measurement``: the result of a ``Timer`` run, with torch's statistics and printout.

A measurement holds ``raw_times`` (seconds per block of ``number_per_run`` runs of
the statement); ``times`` are per single run. The printout follows
``torch.utils.benchmark``::

    <tinyattn.utils.benchmark.common.Measurement object at 0x...>
    f(x)
      Median: 12.34 us
      IQR:    0.56 us (12.01 to 12.57)
      40 measurements, 1000 runs per measurement, 1 thread
"""

from __future__ import annotations

import dataclasses
import math
import textwrap

import numpy as np

__all__ = ["Measurement", "TaskSpec", "select_unit", "trim_sigfig"]

_IQR_WARN_THRESHOLD = 0.1  # iqr / median above this: "could indicate system fluctuation"
_IQR_GROSS_WARN_THRESHOLD = 0.25  # above this: "significant environmental influence"


def select_unit(t: float) -> tuple[str, float]:
    """The unit that shows ``t`` seconds as a number of order 1..999: ("us", 1e-6) ..."""
    exponent = math.floor(math.log10(t) / 3) if t > 0 else -3
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(exponent, "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[unit]


def trim_sigfig(x: float, n: int) -> float:
    """``x`` rounded to ``n`` significant figures (3.14159, 2 -> 3.1)."""
    if x == 0:
        return 0.0
    magnitude = math.ceil(math.log10(abs(x)))
    scale = 10.0 ** (magnitude - n)
    return float(round(x / scale) * scale)


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What was timed: the statement, its setup and the labels shown in printouts."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """The first line of a printout: the label (and sub-label), else the statement."""
        suffix = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + suffix
        if "\n" not in self.stmt:
            return self.stmt + suffix
        sub = f" ({self.sub_label})" if self.sub_label else ""
        return f"stmt:{sub}\n{textwrap.indent(self.stmt, '  ')}"

    def setup_str(self) -> str:
        if not self.setup or self.setup == "pass":
            return ""
        if "\n" in self.setup:
            return f"setup:\n{textwrap.indent(self.setup, '  ')}"
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        """Title, description and setup, one per line (a multi-line one followed by a blank)."""
        parts = [self.title, self.description or "", self.setup_str()]
        return "\n".join(p + "\n" if "\n" in p else p for p in parts if p)


_TASK_FIELDS = frozenset(f.name for f in dataclasses.fields(TaskSpec))


@dataclasses.dataclass(repr=False)
class Measurement:
    """Times of one statement: ``raw_times[i]`` seconds for ``number_per_run`` runs.

    Attributes: ``times`` (seconds per run), ``mean``, ``median``, ``iqr`` (75th minus
    25th percentile, linear interpolation as ``torch.quantile``), ``number_per_run``,
    ``num_threads``, ``title``, ``label``, ``sub_label``, ``description``, ``stmt``.
    """

    number_per_run: int
    raw_times: list[float]
    task_spec: TaskSpec
    metadata: dict | None = None

    def __post_init__(self) -> None:
        self._sorted: tuple[float, ...] = ()

    def __getattr__(self, name: str):
        if name != "task_spec" and name in _TASK_FIELDS:  # m.label, m.stmt ... as in torch
            return getattr(self.task_spec, name)
        raise AttributeError(f"'Measurement' object has no attribute {name!r}")

    @property
    def times(self) -> list[float]:
        """Seconds per single run of the statement, one per measured block."""
        return [t / self.number_per_run for t in self.raw_times]

    def _stats(self) -> tuple[float, ...]:
        if not self._sorted:
            self._sorted = tuple(sorted(self.times))
        return self._sorted

    def _quantile(self, q: float) -> float:
        return float(np.quantile(np.asarray(self._stats(), dtype=np.float64), q))

    @property
    def median(self) -> float:
        return self._quantile(0.5)

    @property
    def mean(self) -> float:
        return float(np.mean(self._stats()))

    @property
    def iqr(self) -> float:
        return self._quantile(0.75) - self._quantile(0.25)

    @property
    def title(self) -> str:
        return self.task_spec.title

    @property
    def env(self) -> str:
        return "Unspecified env" if self.task_spec.env is None else self.task_spec.env

    @property
    def as_row_name(self) -> str:
        return self.task_spec.sub_label or self.task_spec.stmt or "[Unknown]"

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        """Whether ``iqr / median`` is below ``threshold``."""
        return self.iqr / self.median < threshold

    @property
    def significant_figures(self) -> int:
        """Figures the data support: from the interquartile spread (z = 1.645), 1 to 4."""
        times = self._stats()
        n = len(times)
        lo, hi = int(n // 4), int(math.ceil(3 * n / 4))
        middle = np.asarray(times[lo:hi], dtype=np.float64)
        if len(middle) < 2:
            return 1 if n < 2 else 4
        error = 1.645 * float(np.std(middle, ddof=1)) / math.sqrt(len(middle))
        relative = error / float(np.mean(middle)) if np.mean(middle) else 1.0
        if relative <= 0:
            return 4
        return int(min(max(math.floor(-math.log10(relative)), 1), 4))

    @property
    def has_warnings(self) -> bool:
        return bool(self._warnings())

    def _warnings(self) -> list[str]:
        if not self._stats() or self.median == 0:
            return []
        if self.meets_confidence(_IQR_WARN_THRESHOLD):
            return []
        why = (
            "This suggests significant environmental influence."
            if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD)
            else "This could indicate system fluctuation."
        )
        percent = self.iqr / self.median * 100
        return [
            f"  WARNING: Interquartile range is {percent:.1f}% of the median measurement.\n"
            f"           {why}"
        ]

    def __repr__(self) -> str:
        n = len(self._stats())
        unit, scale = select_unit(self.median)
        lines = [object.__repr__(self), self.task_spec.summarize()]
        lines.append(f"  {'Median: ' if n > 1 else ''}{self.median / scale:.2f} {unit}")
        if n >= 4:
            p25, p75 = self._quantile(0.25), self._quantile(0.75)
            lines.append(
                f"  IQR:    {self.iqr / scale:.2f} {unit} ({p25 / scale:.2f} to {p75 / scale:.2f})"
            )
        threads = f"{self.num_threads} thread{'s' if self.num_threads > 1 else ''}"
        lines.append(
            f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
            f"{'per measurement,' if n > 1 else ','} {threads}"
        )
        lines.extend(self._warnings())
        return "\n".join(lines).strip()

    @staticmethod
    def merge(measurements) -> list[Measurement]:
        """Pool replicates of the same task into one measurement each (per-run times)."""
        groups: dict[TaskSpec, list[float]] = {}
        for m in measurements:
            groups.setdefault(m.task_spec, []).extend(m.times)
        return [Measurement(1, times, spec) for spec, times in groups.items()]
