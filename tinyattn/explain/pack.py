"""Tensors as page data: one batch item, at most ``rows x cols`` numbers, exact statistics.

A tensor of 3 or more dims is shown at index 0 of its leading dims (batch item 0,
head 0), as a 2-D table cut to ``rows x cols``; the statistics (min, max, mean, norm,
counts of NaN and inf) are computed on the whole tensor, so the page states exactly
what was cut. Numbers are written with 8 significant digits, which keeps float32
exact to well under 1e-6 and the file deterministic.
"""

from __future__ import annotations

import numpy as np

ROWS = 16
COLS = 16


def number(x) -> float | None:
    """A JSON number with 8 significant digits (None for NaN and inf)."""
    x = float(x)
    if not np.isfinite(x):
        return None
    return float(f"{x:.8g}")


def stats(a: np.ndarray) -> dict:
    """Exact statistics of the whole array, in float64."""
    a = np.asarray(a)
    if a.dtype.kind not in "fiub" or a.size == 0:
        return {"numel": int(a.size)}
    f = a.astype(np.float64).ravel()
    finite = f[np.isfinite(f)]
    out = {"numel": int(a.size), "nan": int(np.isnan(f).sum()), "inf": int(np.isinf(f).sum())}
    if finite.size:
        out.update(
            min=number(finite.min()),
            max=number(finite.max()),
            mean=number(finite.mean()),
            norm=number(np.sqrt(np.dot(finite, finite))),
        )
    return out


def slice_2d(a: np.ndarray, rows: int = ROWS, cols: int = COLS) -> tuple[np.ndarray, list]:
    """The 2-D table shown for ``a`` and the leading indices taken (``[0, 0]``)."""
    a = np.asarray(a)
    lead: list = []
    while a.ndim > 2:
        a = a[0]
        lead.append(0)
    if a.ndim == 0:
        a = a.reshape(1, 1)
    elif a.ndim == 1:
        a = a.reshape(1, -1)
        cols = max(cols, 2 * cols)
    return a[:rows, :cols], lead


def pack(a, rows: int = ROWS, cols: int = COLS) -> dict:
    """``{shape, dtype, lead, data, stats}`` for the page (``data``: rows of numbers)."""
    a = np.asarray(a)
    table, lead = slice_2d(a, rows, cols)
    if a.dtype.kind not in "fiub":
        data: list = []
    else:
        data = [[number(v) for v in row] for row in table.astype(np.float64)]
    return {
        "shape": list(a.shape),
        "dtype": a.dtype.name,
        "lead": lead,
        "data": data,
        "stats": stats(a),
    }
