"""``Compare``: many measurements as one table per label, as torch prints them.

Rows are ``sub_label`` (grouped by thread count), columns ``description``, cells the
median in a unit shared by the table::

    [------------- sums -------------]
                |     a     |     b
    1 threads: -----------------------
          n=1   |   4483.2  |    563.3

    Times are in nanoseconds (ns).
"""

from __future__ import annotations

import math

from .common import Measurement, select_unit, trim_sigfig

__all__ = ["Compare"]

_UNIT_NAMES = {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}
_ESC = {"best": "\033[92m\033[1m", "good": "\033[34m\033[1m", "bad": "\033[2m\033[91m"}
_ESC.update({"very_bad": "\033[31m\033[1m", "end": "\033[0m\033[0m"})


def _unique(items) -> list:
    return list(dict.fromkeys(items))


class Compare:
    """Tables of medians: one per ``label``, rows ``sub_label``, columns ``description``.

    ``trim_significant_figures()`` rounds each cell to the figures its spread supports,
    ``colorize(rowwise=False)`` marks the best (green) and slow (red) cells of each
    column (or row), ``highlight_warnings()`` appends ``(! XX%)`` to noisy cells.
    """

    def __init__(self, results: list[Measurement]) -> None:
        self._results: list[Measurement] = []
        self.extend_results(results)
        self._trim = False
        self._colorize: str | None = None
        self._highlight = False

    def extend_results(self, results) -> None:
        for r in results:
            if not isinstance(r, Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        self._trim = True

    def colorize(self, rowwise: bool = False) -> None:
        self._colorize = "row" if rowwise else "column"

    def highlight_warnings(self) -> None:
        self._highlight = True

    def print(self) -> None:
        print(str(self))

    def __str__(self) -> str:
        merged = Measurement.merge(self._results)
        labels = _unique(m.label for m in merged)
        return "\n".join(self._table([m for m in merged if m.label == label]) for label in labels)

    def _table(self, results: list[Measurement]) -> str:
        unit, scale = select_unit(min(m.median for m in results))
        row_keys = _unique((m.num_threads, m.env, m.as_row_name) for m in results)
        row_keys.sort(key=lambda key: key[:2])  # thread groups; statement order kept
        col_keys = _unique(m.description for m in results)
        cells = {((m.num_threads, m.env, m.as_row_name), m.description): m for m in results}
        grid = [[cells.get((r, c)) for c in col_keys] for r in row_keys]
        envs = {m.env for m in results}
        show_env = len(envs) > 1
        env_width = max(len(e) for e in envs) if show_env else 0
        highlight = self._highlight and any(m.has_warnings for m in results)
        templates = [
            self._template([row[j] for row in grid], scale, highlight) for j in range(len(col_keys))
        ]

        def cell(m, template) -> str:
            if m is None:
                return " " * len(template.format(1.0, ""))
            value = m.median / scale
            if self._trim:
                value = trim_sigfig(value, m.significant_figures)
            spread = f" (! {m.iqr / m.median * 100:.0f}%)" if highlight and m.has_warnings else ""
            return template.format(value, spread)

        strings = [[""] + ["" if c is None else str(c) for c in col_keys]]
        for (_, env, name), row in zip(row_keys, grid):
            env_str = (f"({env})" if show_env else "").ljust(env_width + 4)
            strings.append(["  " + env_str + name] + [cell(m, t) for m, t in zip(row, templates)])
        widths = [max(len(s[j]) for s in strings) for j in range(len(strings[0]))]
        header = "  |  ".join(s.center(w) for s, w in zip(strings[0], widths))
        lines = [header]
        previous_threads = None
        for (threads, _, _), row, cols in zip(row_keys, grid, strings[1:]):
            if threads != previous_threads:
                lines.append(f"{threads} threads: ".ljust(len(header), "-"))
                previous_threads = threads
            parts = [cols[0].ljust(widths[0])]
            for j, (text, width, m) in enumerate(zip(cols[1:], widths[1:], row)):
                text = text.center(width)
                if self._colorize and m is not None:
                    peers = row if self._colorize == "row" else [g[j] for g in grid]
                    text = _colored(text, m.median, min(p.median for p in peers if p is not None))
                parts.append(text)
            lines.append("  |  ".join(parts))
        label = results[0].label or ""
        out = [f"[{(' ' + label + ' ').center(len(header) - 2, '-')}]", *lines, ""]
        out.append(f"Times are in {_UNIT_NAMES[unit]}s ({unit}).")
        if highlight:
            out.append("(! XX%) Measurement has high variance, where XX is the IQR / median * 100.")
        return "\n".join(out) + "\n"

    def _template(self, column: list, scale: float, highlight: bool) -> str:
        present = [m for m in column if m is not None]
        digits = [math.ceil(math.log10(m.median / scale)) for m in present]
        unit_digits = max(digits)
        decimals = 1
        if self._trim:
            decimals = min(max(m.significant_figures - d, 0) for d, m in zip(digits, present))
        length = unit_digits + decimals + (1 if decimals else 0)
        return f"{{:>{length}.{decimals}f}}{{:>{7 if highlight else 0}}}"


def _colored(text: str, value: float, best: float) -> str:
    if value <= best * 1.01 or value <= best + 100e-9:
        return _ESC["best"] + text + _ESC["end"]
    if value <= best * 1.1:
        return _ESC["good"] + text + _ESC["end"]
    if value >= best * 5:
        return _ESC["very_bad"] + text + _ESC["end"]
    if value >= best * 2:
        return _ESC["bad"] + text + _ESC["end"]
    return text
