"""torch-style ``repr`` of tensors: ``tensor([[0.4047, 0.5953]], requires_grad=True)``."""

from __future__ import annotations

import numpy as np

from . import _dtype as dt


def _format_array(arr: np.ndarray) -> str:
    if arr.dtype.kind == "f":
        finite = arr[np.isfinite(arr)]
        integral = finite.size == 0 or bool(np.all(finite == np.round(finite)))
        big = finite.size and (
            np.abs(finite).max() >= 1e8
            or (np.abs(finite[finite != 0]).min() < 1e-4 if np.any(finite != 0) else False)
        )
        if integral and not big:
            return np.array2string(
                arr,
                separator=", ",
                prefix="tensor(",
                floatmode="unique",
                threshold=1000,
                edgeitems=3,
            )
        return np.array2string(
            arr,
            separator=", ",
            prefix="tensor(",
            precision=4,
            floatmode="fixed" if not big else "maxprec",
            suppress_small=False,
            threshold=1000,
            edgeitems=3,
        )
    return np.array2string(arr, separator=", ", prefix="tensor(", threshold=1000, edgeitems=3)


def tensor_repr(t) -> str:
    arr = t._data
    body = _format_array(arr)
    extras = []
    default_dtypes = (dt.get_default_dtype().np_dtype, np.dtype(np.int64), np.dtype(np.bool_))
    if arr.size == 0:
        extras.append(f"size={tuple(arr.shape)}")
    if (
        arr.dtype not in default_dtypes
        or arr.size == 0
        and arr.dtype != dt.get_default_dtype().np_dtype
    ):
        extras.append(f"dtype={t.dtype!r}")
    if t._grad_fn is not None:
        extras.append(f"grad_fn=<{t._grad_fn.name}>")
    elif t._requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"
