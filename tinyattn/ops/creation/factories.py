"""Tensor factories: tensor, zeros, ones, full, arange, linspace, eye ... (the random ones,
``rand``, ``randn`` ..., are in ``ops/random/``)."""

from __future__ import annotations

import math
import numbers

import numpy as np

from ...core import _dtype as dt
from ...core.device import check_device
from ...core.tensor import Tensor
from ...foundations.type_names import type_name
from .._util import int_list, shape_args

__all__ = [
    "tensor",
    "as_tensor",
    "from_numpy",
    "zeros",
    "ones",
    "empty",
    "full",
    "zeros_like",
    "ones_like",
    "empty_like",
    "full_like",
    "arange",
    "linspace",
    "eye",
]


def _unwrap_nested(data):
    """Lists/tuples that may contain tensors, as plain nested lists/arrays."""
    if isinstance(data, Tensor):
        return data._data
    if isinstance(data, (list, tuple)):
        return [_unwrap_nested(d) for d in data]
    return data


def _has_numpy_leaf(data) -> bool:
    """Whether nested data holds NumPy scalars/arrays (which keep their dtype, as in torch)."""
    if isinstance(data, (np.ndarray, np.generic)):
        return True
    if isinstance(data, (list, tuple)):
        return any(_has_numpy_leaf(d) for d in data)
    return False


def _leaf_dtype(data) -> np.dtype:
    """torch.tensor's dtype for nested data holding NumPy leaves: each leaf's own type (a
    Python float the default float, an int int64, a bool bool; a NumPy scalar or array its
    dtype), promoted by category first (``[np.float32(1.5), 2.0]`` is float32, not float64)."""
    leaves: list[np.dtype] = []

    def walk(x) -> None:
        if isinstance(x, (np.ndarray, np.generic)):
            leaves.append(x.dtype)
        elif isinstance(x, (list, tuple)):
            for item in x:
                walk(item)
        elif isinstance(x, bool):
            leaves.append(np.dtype(np.bool_))
        elif isinstance(x, int):
            leaves.append(np.dtype(np.int64))
        elif isinstance(x, float):
            leaves.append(dt.get_default_dtype().np_dtype)
        else:
            leaves.append(np.asarray(x).dtype)

    walk(data)
    return dt._promote_same_rank(leaves)


def _as_array(data, op: str) -> np.ndarray:
    try:
        return np.asarray(data)
    except ValueError as e:  # ragged nesting
        raise ValueError(
            f"{op}(): nested sequences must be rectangular (every row the same length): {e}"
        ) from None


def _infer_np_dtype(data, op: str = "tensor") -> np.dtype:
    """torch.tensor's inference: Python floats -> default float, ints -> int64, bools -> bool.

    NumPy arrays and scalars keep their own dtype.
    """
    if isinstance(data, (np.ndarray, np.generic)):
        return data.dtype
    arr = _as_array(data, op)
    if arr.dtype.kind in "fiub" and _has_numpy_leaf(data):
        return _leaf_dtype(data)
    if arr.dtype.kind == "f":
        return dt.get_default_dtype().np_dtype
    if arr.dtype.kind in "iu":
        return np.dtype(np.int64)
    if arr.dtype.kind == "b":
        return np.dtype(np.bool_)
    if arr.dtype.kind == "c":  # Python complex numbers: the default complex dtype (torch)
        return dt.default_complex_np_dtype()
    raise TypeError(
        f"{op}(): could not infer a dtype from data of type {type_name(data)} "
        f"(expected numbers, bools, nested lists of them, arrays or tensors)"
    )


def _finish(data: np.ndarray, requires_grad: bool) -> Tensor:
    t = Tensor._make(data)
    if requires_grad:
        t.requires_grad_(True)
    return t


def tensor(data, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, numbers, arrays or tensors)."""
    check_device(device)
    raw = _unwrap_nested(data)
    np_dtype = dt.to_dtype(dtype).np_dtype if dtype is not None else _infer_np_dtype(raw)
    dt.from_numpy_dtype(np_dtype)  # a clear TypeError for dtypes tinyattn lacks
    try:
        data = np.array(raw, dtype=np_dtype, copy=True)
    except ValueError as e:
        raise ValueError(f"tensor(): could not convert the data to {np_dtype}: {e}") from None
    return _finish(data, requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like ``tensor`` but shares memory with a NumPy array / tensor when no conversion is needed."""
    check_device(device)
    if isinstance(data, Tensor):
        return data if dtype is None else data.to(dtype)
    if isinstance(data, np.ndarray) and (
        dtype is None or dt.to_dtype(dtype).np_dtype == data.dtype
    ):
        dt.from_numpy_dtype(data.dtype)
        return Tensor._make(data)
    return tensor(data, dtype=dtype)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor sharing memory with ``ndarray`` (no copy)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy(): expected np.ndarray (got {type_name(ndarray)})")
    dt.from_numpy_dtype(ndarray.dtype)
    return Tensor._make(ndarray)


def _dtype_or_default(dtype) -> np.dtype:
    return (dt.to_dtype(dtype) if dtype is not None else dt.get_default_dtype()).np_dtype


def _sizes(size, name: str) -> tuple[int, ...]:
    """The shape given as varargs or one sequence; RuntimeError naming ``name`` if negative."""
    shape = shape_args(size, name)
    if any(s < 0 for s in shape):
        raise RuntimeError(
            f"{name}(): trying to create tensor with negative dimension: {list(shape)}"
        )
    return shape


def _factory(np_fn, name):
    def fn(*sizes, size=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
        check_device(device)
        shape = _sizes(int_list(sizes, size, name, "size"), name)
        return _finish(np_fn(shape, dtype=_dtype_or_default(dtype)), requires_grad)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (
        f"A tensor of the given shape filled by ``numpy.{np_fn.__name__}`` (default float dtype).\n\n"
        f"The shape comes as ``{name}(2, 3)``, ``{name}((2, 3))`` or ``{name}(size=(2, 3))``."
    )
    return fn


zeros = _factory(np.zeros, "zeros")
ones = _factory(np.ones, "ones")
empty = _factory(np.empty, "empty")


def _as_python_scalar(value):
    """A NumPy scalar as the Python number torch's argument parser makes of it: np.bool_ is
    not an int to it, so it is read as a float (``torch.full((2,), np.True_)`` is float32);
    other integers give int64 and floats the default float (not their own width)."""
    if isinstance(value, np.bool_):
        return float(value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def full(size, fill_value, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value`` (dtype inferred from the value)."""
    check_device(device)
    if dtype is None:
        dtype = dt.from_numpy_dtype(_infer_np_dtype(_as_python_scalar(fill_value)))
    shape = _sizes((size,), "full")
    return _finish(np.full(shape, fill_value, dtype=dt.to_dtype(dtype).np_dtype), requires_grad)


def _like(np_fn, name):
    def fn(
        input: Tensor, *, dtype=None, device=None, requires_grad: bool = False, memory_format=None
    ) -> Tensor:
        check_device(device)
        d = dt.to_dtype(dtype).np_dtype if dtype is not None else input._data.dtype
        return _finish(np_fn(input._data.shape, dtype=d), requires_grad)

    fn.__name__ = name
    return fn


zeros_like = _like(np.zeros, "zeros_like")
ones_like = _like(np.ones, "ones_like")
empty_like = _like(np.empty, "empty_like")


def full_like(input: Tensor, fill_value, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    d = dt.to_dtype(dtype).np_dtype if dtype is not None else input._data.dtype
    return _finish(np.full(input._data.shape, fill_value, dtype=d), requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Values from ``start`` to ``end`` (exclusive) by ``step``; int64 unless a bound is a float."""
    check_device(device)
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if step == 0:
        raise RuntimeError("arange(): step must be nonzero")
    if (vals[1] - vals[0]) * vals[2] < 0:
        raise RuntimeError(
            f"arange(): upper bound and lower bound inconsistent with step sign: "
            f"start={vals[0]}, end={vals[1]}, step={vals[2]}"
        )
    if dtype is None:
        floating = any(isinstance(v, float) for v in vals)
        np_dtype = dt.get_default_dtype().np_dtype if floating else np.dtype(np.int64)
    else:
        np_dtype = dt.to_dtype(dtype).np_dtype
    if np_dtype.kind in "iu" and any(isinstance(v, float) for v in vals):
        return _finish(_integer_arange(*vals, np_dtype).astype(np_dtype), requires_grad)
    return _finish(np.arange(*vals).astype(np_dtype), requires_grad)


def _integer_arange(start, end, step, np_dtype: np.dtype) -> np.ndarray:
    """torch's arange into an integer dtype from float bounds: start, end and step are cast
    to integers first and the values are ``start + i * step``. For int64 the length comes
    from the cast values (``step=0.3`` is 0: an error); for the other integer dtypes from the
    float ones (``arange(0, 5, 1.5, dtype=int32)`` is ``[0, 1, 2, 3]``; a step cast to 0
    repeats ``start``)."""
    xs, xe, xst = int(start), int(end), int(step)
    if np_dtype == np.int64:
        if xst == 0:
            raise RuntimeError(f"arange(): step must be nonzero (step={step} cast to int64)")
        sgn = (xst > 0) - (xst < 0)
        numerator = xe - xs + xst - sgn
        size = abs(numerator) // abs(xst) * (1 if (numerator >= 0) == (xst > 0) else -1)
    else:
        size = math.ceil((float(end) - float(start)) / float(step))
    return xs + np.arange(max(size, 0), dtype=np.int64) * xst


def _linspace_values(start, end, steps: int, np_dtype: np.dtype) -> np.ndarray:
    """``steps`` evenly spaced float64 values from ``start`` to ``end``.

    For an integer ``np_dtype`` torch first truncates both ends to integers, then fills
    the first half as ``start + step * i`` and the second as ``end - step * (steps - 1 - i)``
    (``step`` a float); the caller's cast truncates each value. So
    ``linspace(0.5, 2.5, 5, dtype=int64)`` is ``[0, 0, 1, 1, 2]`` (not ``[0, 1, 1, 2, 2]``).
    """
    if np_dtype.kind not in "iu":
        return np.linspace(start, end, steps)
    start, end = int(start), int(end)
    if steps == 1:
        return np.array([start], dtype=np.float64)
    step = (end - start) / (steps - 1)
    i = np.arange(steps)
    return np.where(i < steps // 2, start + step * i, end - step * (steps - 1 - i))


def linspace(start, end, steps: int, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    check_device(device)
    if steps < 0:
        raise RuntimeError(f"linspace(): number of steps must be non-negative, got {steps}")
    np_dtype = _dtype_or_default(dtype)
    return _finish(_linspace_values(start, end, steps, np_dtype).astype(np_dtype), requires_grad)


def eye(n: int, m: int | None = None, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    check_device(device)
    for name, size in (("n", n), ("m", m)):
        if size is not None and size < 0:
            raise RuntimeError(f"eye(): {name} must be greater or equal to 0, got {size}")
    return _finish(np.eye(n, m, dtype=_dtype_or_default(dtype)), requires_grad)


# -- Tensor.new_*: a new tensor with another tensor's dtype (the methods forward here) ------
def _size_arg(sizes: tuple, size, name: str) -> tuple:
    """The size given as ints or a tuple (``new_ones(2, 3)``) or as ``size=`` (torch allows both)."""
    if size is None:
        return sizes
    if sizes:
        raise TypeError(f"{name}(): got the size both positionally {sizes} and as size={size}")
    return (size,)


def _new_like(input: Tensor, fill, size, dtype, requires_grad: bool, name: str) -> Tensor:
    d = dt.to_dtype(dtype).np_dtype if dtype is not None else input._data.dtype
    return _finish(fill(_sizes(size, name), dtype=d), requires_grad)


def new_zeros(
    input: Tensor, *sizes, size=None, dtype=None, device=None, requires_grad: bool = False
) -> Tensor:
    """Zeros of ``size`` with ``input``'s dtype (unless ``dtype`` is given)."""
    check_device(device)
    return _new_like(
        input, np.zeros, _size_arg(sizes, size, "new_zeros"), dtype, requires_grad, "new_zeros"
    )


def new_ones(
    input: Tensor, *sizes, size=None, dtype=None, device=None, requires_grad: bool = False
) -> Tensor:
    """Ones of ``size`` with ``input``'s dtype (unless ``dtype`` is given)."""
    check_device(device)
    return _new_like(
        input, np.ones, _size_arg(sizes, size, "new_ones"), dtype, requires_grad, "new_ones"
    )


def new_empty(
    input: Tensor, *sizes, size=None, dtype=None, device=None, requires_grad: bool = False
) -> Tensor:
    """An uninitialised tensor of ``size`` with ``input``'s dtype (unless ``dtype`` is given)."""
    check_device(device)
    return _new_like(
        input, np.empty, _size_arg(sizes, size, "new_empty"), dtype, requires_grad, "new_empty"
    )


def new_full(
    input: Tensor, size, fill_value, *, dtype=None, device=None, requires_grad: bool = False
) -> Tensor:
    """``fill_value`` in a tensor of ``size`` with ``input``'s dtype (unless ``dtype`` is given)."""
    check_device(device)
    if not isinstance(fill_value, (numbers.Number, np.generic, Tensor)):
        raise TypeError(
            f"new_full(): argument 'fill_value' must be a number, got {type_name(fill_value)}"
        )
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()

    def fill(shape, dtype):
        return np.full(shape, fill_value, dtype=dtype)

    return _new_like(input, fill, (size,), dtype, requires_grad, "new_full")


def new_tensor(
    input: Tensor, data, *, dtype=None, device=None, requires_grad: bool = False
) -> Tensor:
    """``data`` copied into a new leaf tensor with ``input``'s dtype (unless ``dtype`` is given)."""
    check_device(device)
    if isinstance(data, Tensor):
        data = data.detach().numpy()
    return tensor(
        data, dtype=dtype if dtype is not None else input.dtype, requires_grad=requires_grad
    )
