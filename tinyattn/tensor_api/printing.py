"""torch-style ``repr`` of tensors: ``tensor([[0.4047, 0.5953]], requires_grad=True)``.

This follows torch's ``_tensor_str`` rules so printed output reads the same:

* floats are shown with 4 decimals (``0.4047``); if every finite value is a whole
  number they are shown as ``1.`` ; scientific notation (``1.0000e-05``) is used
  when the non-zero magnitudes span more than 1000x, exceed 1e8 or go below 1e-4;
* all elements share one width (right-aligned), lines wrap at 80 characters;
* more than 1000 elements are summarised with ``...`` (3 items at each edge);
* the suffix lists ``size=`` (empty tensors), ``dtype=`` (non-default dtypes),
  then ``grad_fn=<...>`` or ``requires_grad=True``.
"""

from __future__ import annotations

import math

import numpy as np

from ..core import _dtype as dt

PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80
SCI_MODE: bool | None = None  # None: chosen from the values (see _Formatter)

_PROFILES = {  # (precision, threshold, edgeitems, linewidth), as torch's
    "default": (4, 1000, 3, 80),
    "short": (2, 1000, 2, 80),
    "full": (4, math.inf, 3, 80),
}


def set_printoptions(
    precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None
) -> None:
    """How tensors print, as ``torch.set_printoptions``: ``precision`` (decimals),
    ``threshold`` (more elements than this are summarised), ``edgeitems`` (items shown at
    each edge when summarised), ``linewidth`` (characters per line), ``profile`` ("default",
    "short" or "full": sets the four first) and ``sci_mode`` (True/False forces scientific
    notation on or off; None, also when left out, chooses it from the values)."""
    global PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH, SCI_MODE
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(
                f"set_printoptions(): profile must be one of {sorted(_PROFILES)}, got {profile!r}"
            )
        PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH = _PROFILES[profile]
    for name, value in (
        ("precision", precision),
        ("threshold", threshold),
        ("edgeitems", edgeitems),
        ("linewidth", linewidth),
    ):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise TypeError(f"set_printoptions(): {name} must be a number, got {value!r}")
    if precision is not None:
        PRECISION = int(precision)
    if threshold is not None:
        THRESHOLD = threshold
    if edgeitems is not None:
        EDGEITEMS = int(edgeitems)
    if linewidth is not None:
        LINEWIDTH = int(linewidth)
    SCI_MODE = None if sci_mode is None else bool(sci_mode)


class _Formatter:
    """Chooses one number format and width for all elements (torch's ``_Formatter``)."""

    def __init__(self, values: np.ndarray) -> None:
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        if not self.floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(f"{v}"))
            return
        nonzero_finite = flat[np.isfinite(flat) & (flat != 0)]
        if nonzero_finite.size == 0:
            return
        mags = np.abs(nonzero_finite).astype(np.float64)
        lo, hi = mags.min(), mags.max()
        self.int_mode = bool(np.all(nonzero_finite == np.ceil(nonzero_finite)))
        self.sci_mode = bool(hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4)
        if SCI_MODE is not None:  # forced (set_printoptions), before the widths as torch's
            self.sci_mode = SCI_MODE
        for v in nonzero_finite.tolist():
            if self.sci_mode:
                s = f"{v:.{PRECISION}e}"
            elif self.int_mode:
                s = f"{v:.0f}."
            else:
                s = f"{v:.{PRECISION}f}"
            self.max_width = max(self.max_width, len(s))

    def format(self, v) -> str:
        if self.floating:
            if self.sci_mode:
                s = f"{v:{self.max_width}.{PRECISION}e}"
            elif self.int_mode:
                s = f"{v:.0f}" + ("" if math.isinf(v) or math.isnan(v) else ".")
            else:
                s = f"{v:.{PRECISION}f}"
        else:
            s = f"{v}"
        return (self.max_width - len(s)) * " " + s


class _ComplexFormatter:
    """Complex numbers as torch prints them: the real parts with one ``_Formatter``, the
    imaginary parts with another, joined as ``1.5000-2.0000j``."""

    def __init__(self, values: np.ndarray) -> None:
        self.real = _Formatter(np.ascontiguousarray(values.real))
        self.imag = _Formatter(np.ascontiguousarray(values.imag))
        self.max_width = self.real.max_width + self.imag.max_width + 1  # (+ the "j")

    def format(self, v) -> str:
        re = self.real.format(v.real)
        im = (self.imag.format(v.imag) + "j").lstrip()
        return re + im if im[0] in "+-" else re + "+" + im


def _formatter(values: np.ndarray):
    return _ComplexFormatter(values) if values.dtype.kind == "c" else _Formatter(values)


def _summarized(arr: np.ndarray) -> np.ndarray:
    """Only the edge items of every dim (what a summarised print shows), for the formatter."""
    for axis in range(arr.ndim):
        if arr.shape[axis] > 2 * EDGEITEMS:
            idx = np.r_[0:EDGEITEMS, arr.shape[axis] - EDGEITEMS : arr.shape[axis]]
            arr = np.take(arr, idx, axis=axis)
    return arr


def _vector_str(arr: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    per_line = max(1, (LINEWIDTH - indent) // (fmt.max_width + 2))
    if summarize and arr.shape[0] > 2 * EDGEITEMS:
        items = (
            [fmt.format(v) for v in arr[:EDGEITEMS].tolist()]
            + [" ..."]
            + [fmt.format(v) for v in arr[-EDGEITEMS:].tolist()]
        )
    else:
        items = [fmt.format(v) for v in arr.tolist()]
    lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _array_str(arr: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if arr.ndim == 0:
        return fmt.format(arr.item())
    if arr.ndim == 1:
        return _vector_str(arr, indent, summarize, fmt)
    n = arr.shape[0]
    if summarize and n > 2 * EDGEITEMS:
        parts = (
            [_array_str(arr[i], indent + 1, summarize, fmt) for i in range(EDGEITEMS)]
            + ["..."]
            + [_array_str(arr[i], indent + 1, summarize, fmt) for i in range(n - EDGEITEMS, n)]
        )
    else:
        parts = [_array_str(arr[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def _add_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    out = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        # measured as torch prints it ("dtype=torch.float64"), so lines break where torch's
        # do: "tinyattn." is 3 characters longer than "torch."
        width = len(suffix.replace("tinyattn.", "torch."))
        if last_line_len + width + 2 > LINEWIDTH:
            out.append(",\n" + " " * indent + suffix)
            last_line_len = indent + width
        else:
            out.append(", " + suffix)
            last_line_len += width + 2
    out.append(")")
    return "".join(out)


def tensor_repr(t) -> str:
    """``repr(t)`` in torch's format (see the module docstring)."""
    arr = t._data
    prefix = "tensor("
    indent = len(prefix)
    default_float = dt.get_default_dtype().np_dtype
    suffixes = []
    if arr.size == 0:
        body = "[]"
        if arr.ndim != 1:
            suffixes.append(f"size={tuple(arr.shape)}")
        if arr.dtype != default_float:
            suffixes.append(f"dtype={t.dtype!r}")
    else:
        summarize = arr.size > THRESHOLD
        fmt = _formatter(_summarized(arr) if summarize else arr)
        body = _array_str(arr, indent, summarize, fmt)
        usual = (default_float, dt.default_complex_np_dtype(), np.dtype(np.int64), np.dtype(bool))
        if arr.dtype not in usual:
            suffixes.append(f"dtype={t.dtype!r}")
    if t._grad_fn is not None:
        suffixes.append(f"grad_fn=<{t._grad_fn.name()}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)
