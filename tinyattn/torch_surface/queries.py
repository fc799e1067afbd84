"""torch's functions about dtypes, devices and threads: finfo / iinfo, promote_types,
result_type, can_cast, is_nonzero, is_same_size, get/set_num_threads,
get/set_default_device, detach.
"""

from __future__ import annotations

import numbers

import numpy as np

from ..core import _dtype as dt
from ..core.device import check_device
from ..core.device import device as _device
from ..foundations.type_names import type_name

__all__ = [
    "finfo",
    "iinfo",
    "promote_types",
    "result_type",
    "can_cast",
    "is_signed",
    "is_nonzero",
    "is_same_size",
    "get_num_threads",
    "set_num_threads",
    "get_default_device",
    "set_default_device",
    "detach",
]


def _as_dtype(d, op: str) -> dt.dtype:
    try:
        return dt.to_dtype(d)
    except TypeError:
        raise TypeError(f"{op}(): expected a tinyattn dtype, got {d!r}") from None


class finfo:
    """Limits of a floating dtype (default: the default dtype): ``bits``, ``eps`` (1.0's
    gap to the next number), ``max``, ``min`` (= -max), ``tiny`` = ``smallest_normal``,
    ``resolution`` (10**-precision) and ``dtype`` (its name), all Python numbers."""

    def __init__(self, type=None) -> None:
        d = dt.get_default_dtype() if type is None else _as_dtype(type, "finfo")
        if not d.is_floating_point:
            raise TypeError(
                f"torch.finfo() requires a floating point input type, got {d!r}. Use "
                "torch.iinfo to handle it"
            )
        info = np.finfo(d.np_dtype)
        self.bits: int = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)  # a Python float, as torch's
        self.dtype: str = d.name

    def __eq__(self, other) -> bool:  # torch: equal when they describe the same dtype
        return isinstance(other, finfo) and other.dtype == self.dtype

    __hash__ = None  # unhashable, as torch.finfo

    def __repr__(self) -> str:
        return (
            f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
            f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, "
            f"dtype={self.dtype})"
        )


class iinfo:
    """Limits of an integer dtype: ``bits``, ``max``, ``min`` (Python ints) and ``dtype``."""

    def __init__(self, type) -> None:
        d = _as_dtype(type, "iinfo")
        if d.np_dtype.kind == "b":
            raise TypeError(f"{d!r} is not supported by torch.iinfo")
        if d.np_dtype.kind not in "iu":
            raise TypeError(
                f"torch.iinfo() requires an integer input type, got {d!r}. Use torch.finfo to "
                "handle it"
            )
        info = np.iinfo(d.np_dtype)
        self.bits: int = int(info.bits)
        self.max: int = int(info.max)
        self.min: int = int(info.min)
        self.dtype: str = d.name

    def __eq__(self, other) -> bool:
        return isinstance(other, iinfo) and other.dtype == self.dtype

    __hash__ = None

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


def promote_types(type1, type2) -> dt.dtype:
    """The smallest dtype both ``type1`` and ``type2`` convert to (torch's promotion)."""
    a, b = _as_dtype(type1, "promote_types"), _as_dtype(type2, "promote_types")
    return dt.from_numpy_dtype(dt._promote_same_rank([a.np_dtype, b.np_dtype]))


def result_type(tensor1, tensor2) -> dt.dtype:
    """The dtype of an arithmetic op on ``tensor1`` and ``tensor2`` (tensors or numbers):
    a dimensioned tensor outranks a 0-D one, which outranks a Python number, unless the
    lower-ranked operand is of a higher category (bool < int < float)."""
    from ..core.tensor import Tensor

    operands = []
    for name, x in (("tensor1", tensor1), ("tensor2", tensor2)):
        if isinstance(x, Tensor):
            operands.append(x._data)
        elif isinstance(x, (numbers.Number, np.generic)):
            operands.append(x)
        else:
            raise TypeError(
                f"result_type(): argument '{name}' must be Tensor or Number, not {type_name(x)}"
            )
    return dt.from_numpy_dtype(dt.result_type(*operands))


def can_cast(from_, to) -> bool:
    """Whether torch's casting rules allow ``from_`` -> ``to``: any cast that does not
    lower the category (float -> int, int -> bool, float -> bool are refused)."""
    a, b = _as_dtype(from_, "can_cast"), _as_dtype(to, "can_cast")
    return dt._category(a.np_dtype) <= dt._category(b.np_dtype)


def is_signed(input) -> bool:
    """Whether ``input``'s dtype holds negative numbers (floats and signed ints)."""
    return input.is_signed()


def is_nonzero(input) -> bool:
    """``bool(input)`` for a one-element tensor; RuntimeError for any other size."""
    return input.is_nonzero()


def is_same_size(input, other) -> bool:
    """Whether the two tensors have the same shape."""
    return input.is_same_size(other)


def get_num_threads() -> int:
    """Threads tinyattn's numba kernels run on (numba's ``get_num_threads``).

    What it controls here: the parallel attention / softmax / layer-norm kernels. NumPy's
    BLAS (matmul) keeps its own thread count. Importing numba happens on this first call.
    """
    import numba

    return int(numba.get_num_threads())


def set_num_threads(int: int) -> None:  # torch names the parameter "int"
    """Run tinyattn's numba kernels on ``int`` threads (1 <= int <= numba's
    ``NUMBA_NUM_THREADS``, the machine's cores by default).

    Unlike torch's, numba's setting belongs to the calling Python thread: other threads
    keep theirs. NumPy's BLAS (matmul) is not affected.
    """
    import numba

    n = int if isinstance(int, numbers.Integral) and not isinstance(int, bool) else None
    limit = numba.config.NUMBA_NUM_THREADS
    if n is None or not 1 <= n <= limit:
        raise ValueError(
            f"set_num_threads(): expected an int between 1 and {limit} (numba's "
            f"NUMBA_NUM_THREADS), got {int!r}"
        )
    numba.set_num_threads(n)


def get_default_device() -> _device:
    """The device new tensors go to: always the CPU here."""
    return _device("cpu")


def set_default_device(device) -> None:
    """Accepts "cpu", a cpu ``device`` or None (all meaning the CPU, the only device
    tinyattn has); any other device raises RuntimeError."""
    check_device(device)


def detach(input):
    """``input.detach()``: the same data, cut from the graph."""
    return input.detach()
