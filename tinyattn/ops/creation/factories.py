"""Tensor factories: tensor, zeros, ones, full, arange, linspace, eye, rand, randn ..."""

from __future__ import annotations

import math
import numbers

import numpy as np

from ...core import _dtype as dt
from ...core.device import check_device
from ...core.tensor_base import TensorBase
from ...foundations.type_names import type_name
from ...random import _numpy_generator
from ...random.fill import standard_normal, uniform01
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
    "rand_like",
    "randn_like",
    "arange",
    "linspace",
    "eye",
    "rand",
    "randn",
    "randint",
    "randperm",
    "multinomial",
    "bernoulli",
    "normal",
]


def _unwrap_nested(data):
    """Lists/tuples that may contain tensors, as plain nested lists/arrays."""
    if isinstance(data, TensorBase):
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


def _finish(data: np.ndarray, requires_grad: bool) -> TensorBase:
    t = TensorBase._make(data)
    if requires_grad:
        t.requires_grad_(True)
    return t


def tensor(data, *, dtype=None, device=None, requires_grad: bool = False) -> TensorBase:
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


def as_tensor(data, dtype=None, device=None) -> TensorBase:
    """Like ``tensor`` but shares memory with a NumPy array / tensor when no conversion is needed."""
    check_device(device)
    if isinstance(data, TensorBase):
        return data if dtype is None else data.to(dtype)
    if isinstance(data, np.ndarray) and (
        dtype is None or dt.to_dtype(dtype).np_dtype == data.dtype
    ):
        dt.from_numpy_dtype(data.dtype)
        return TensorBase._make(data)
    return tensor(data, dtype=dtype)


def from_numpy(ndarray: np.ndarray) -> TensorBase:
    """A tensor sharing memory with ``ndarray`` (no copy)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy(): expected np.ndarray (got {type_name(ndarray)})")
    dt.from_numpy_dtype(ndarray.dtype)
    return TensorBase._make(ndarray)


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


def _random_float_dtype(dtype, name: str) -> np.dtype:
    np_dtype = _dtype_or_default(dtype)
    if np_dtype.kind not in "fc":
        raise TypeError(f"{name}(): expected a floating point dtype, got {dt.to_dtype(dtype)}")
    return np_dtype


def _factory(np_fn, name):
    def fn(*sizes, size=None, dtype=None, device=None, requires_grad: bool = False) -> TensorBase:
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


def full(size, fill_value, *, dtype=None, device=None, requires_grad: bool = False) -> TensorBase:
    """A tensor of ``size`` filled with ``fill_value`` (dtype inferred from the value)."""
    check_device(device)
    if dtype is None:
        dtype = dt.from_numpy_dtype(_infer_np_dtype(_as_python_scalar(fill_value)))
    shape = _sizes((size,), "full")
    return _finish(np.full(shape, fill_value, dtype=dt.to_dtype(dtype).np_dtype), requires_grad)


def _like(np_fn, name):
    def fn(
        input: TensorBase,
        *,
        dtype=None,
        device=None,
        requires_grad: bool = False,
        memory_format=None,
    ) -> TensorBase:
        check_device(device)
        d = dt.to_dtype(dtype).np_dtype if dtype is not None else input._data.dtype
        return _finish(np_fn(input._data.shape, dtype=d), requires_grad)

    fn.__name__ = name
    return fn


zeros_like = _like(np.zeros, "zeros_like")
ones_like = _like(np.ones, "ones_like")
empty_like = _like(np.empty, "empty_like")


def full_like(
    input: TensorBase, fill_value, *, dtype=None, device=None, requires_grad=False
) -> TensorBase:
    d = dt.to_dtype(dtype).np_dtype if dtype is not None else input._data.dtype
    return _finish(np.full(input._data.shape, fill_value, dtype=d), requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False) -> TensorBase:
    """Values from ``start`` to ``end`` (exclusive) by ``step``; int64 unless a bound is a float."""
    check_device(device)
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, TensorBase) else v for v in (start, end, step)]
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


def linspace(start, end, steps: int, *, dtype=None, device=None, requires_grad=False) -> TensorBase:
    check_device(device)
    if steps < 0:
        raise RuntimeError(f"linspace(): number of steps must be non-negative, got {steps}")
    np_dtype = _dtype_or_default(dtype)
    return _finish(_linspace_values(start, end, steps, np_dtype).astype(np_dtype), requires_grad)


def eye(
    n: int, m: int | None = None, *, dtype=None, device=None, requires_grad=False
) -> TensorBase:
    check_device(device)
    for name, size in (("n", n), ("m", m)):
        if size is not None and size < 0:
            raise RuntimeError(f"eye(): {name} must be greater or equal to 0, got {size}")
    return _finish(np.eye(n, m, dtype=_dtype_or_default(dtype)), requires_grad)


def rand(
    *sizes, size=None, generator=None, dtype=None, device=None, requires_grad=False
) -> TensorBase:
    """Uniform samples on [0, 1) (the shape as in :func:`zeros`)."""
    check_device(device)
    shape = _sizes(int_list(sizes, size, "rand", "size"), "rand")
    np_dtype = _random_float_dtype(dtype, "rand")
    data = _random_parts(uniform01, _numpy_generator(generator), shape, np_dtype, 1.0)
    return _finish(data, requires_grad)


def _random_parts(draw, rng, shape: tuple, np_dtype: np.dtype, complex_scale: float) -> np.ndarray:
    """``draw(rng, shape, np_dtype)``; for a complex dtype, real and imaginary parts drawn
    independently in the matching real dtype and scaled by ``complex_scale`` (torch: randn's
    parts have variance 1/2, so that E|z|^2 = 1; rand's are uniform on [0, 1) each)."""
    if np_dtype.kind != "c":
        return draw(rng, shape, np_dtype)
    part_dtype = np.dtype(np.float32 if np_dtype == np.complex64 else np.float64)
    parts = draw(rng, shape + (2,), part_dtype) * part_dtype.type(complex_scale)
    return (parts[..., 0] + 1j * parts[..., 1]).astype(np_dtype)


def randn(
    *sizes, size=None, generator=None, dtype=None, device=None, requires_grad=False
) -> TensorBase:
    """Standard normal samples (the shape as in :func:`zeros`)."""
    check_device(device)
    shape = _sizes(int_list(sizes, size, "randn", "size"), "randn")
    np_dtype = _random_float_dtype(dtype, "randn")
    data = _random_parts(standard_normal, _numpy_generator(generator), shape, np_dtype, 0.5**0.5)
    return _finish(data, requires_grad)


def randint(low, high=None, size=None, *, generator=None, dtype=None, device=None) -> TensorBase:
    """Integers uniform on [low, high) of the given ``size`` (int64)."""
    check_device(device)
    if size is None:
        if high is None or isinstance(high, (tuple, list)):
            low, high, size = 0, low, high
        else:
            raise TypeError("randint(): missing the 'size' argument")
    if high is None:
        low, high = 0, low
    shape = _sizes((size,), "randint")
    if low >= high:
        raise RuntimeError(
            f"randint(): expected 'low' to be less than 'high', but got low={low} >= high={high}"
        )
    d = dt.to_dtype(dtype).np_dtype if dtype is not None else np.int64
    return TensorBase._make(_numpy_generator(generator).integers(low, high, shape).astype(d))


def randperm(n: int, *, generator=None, dtype=None, device=None) -> TensorBase:
    d = dt.to_dtype(dtype).np_dtype if dtype is not None else np.int64
    if n < 0:
        raise RuntimeError(f"randperm(): n must be non-negative, got {n}")
    return TensorBase._make(_numpy_generator(generator).permutation(n).astype(d))


def rand_like(
    input: TensorBase, *, generator=None, dtype=None, device=None, requires_grad=False
) -> TensorBase:
    """``rand`` of ``input``'s shape and (unless ``dtype`` is given) dtype."""
    check_device(device)
    dtype = dtype or input.dtype
    return rand(input.shape, generator=generator, dtype=dtype, requires_grad=requires_grad)


def randn_like(
    input: TensorBase, *, generator=None, dtype=None, device=None, requires_grad=False
) -> TensorBase:
    """``randn`` of ``input``'s shape and (unless ``dtype`` is given) dtype."""
    check_device(device)
    dtype = dtype or input.dtype
    return randn(input.shape, generator=generator, dtype=dtype, requires_grad=requires_grad)


def bernoulli(input: TensorBase, p=None, *, generator=None) -> TensorBase:
    probs = input._data if p is None else np.full(input._data.shape, p)
    draw = _numpy_generator(generator).random(input._data.shape) < probs
    return TensorBase._make(draw.astype(input._data.dtype))


def multinomial(
    input: TensorBase, num_samples: int, replacement: bool = False, *, generator=None
) -> TensorBase:
    rng = _numpy_generator(generator)
    probs = np.atleast_2d(input._data).astype(np.float64)
    if not replacement and num_samples > probs.shape[1]:
        raise RuntimeError(
            f"multinomial(): cannot sample num_samples={num_samples} > {probs.shape[1]} "
            f"categories (input shape {list(input.shape)}) without replacement"
        )
    if np.any(probs < 0) or not np.all(np.isfinite(probs)) or np.any(probs.sum(axis=1) <= 0):
        raise RuntimeError(
            "multinomial(): probabilities must be finite, non-negative and have a positive sum "
            f"in every row (input shape {list(input.shape)})"
        )
    out = np.stack(
        [
            rng.choice(probs.shape[1], size=num_samples, replace=replacement, p=row / row.sum())
            for row in probs
        ]
    )
    return TensorBase._make((out if input.ndim == 2 else out[0]).astype(np.int64))


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None) -> TensorBase:
    m = mean._data if isinstance(mean, TensorBase) else mean
    s = std._data if isinstance(std, TensorBase) else std
    shape = size if size is not None else np.broadcast_shapes(np.shape(m), np.shape(s))
    data = _numpy_generator(generator).normal(m, s, shape)
    d = (
        dt.to_dtype(dtype).np_dtype
        if dtype is not None
        else (m.dtype if isinstance(m, np.ndarray) else dt.get_default_dtype().np_dtype)
    )
    return TensorBase._make(np.asarray(data, dtype=d))


# -- Tensor.new_*: a new tensor with another tensor's dtype (the methods forward here) ------
def _size_arg(sizes: tuple, size, name: str) -> tuple:
    """The size given as ints or a tuple (``new_ones(2, 3)``) or as ``size=`` (torch allows both)."""
    if size is None:
        return sizes
    if sizes:
        raise TypeError(f"{name}(): got the size both positionally {sizes} and as size={size}")
    return (size,)


def _new_like(input: TensorBase, fill, size, dtype, requires_grad: bool, name: str) -> TensorBase:
    d = dt.to_dtype(dtype).np_dtype if dtype is not None else input._data.dtype
    return _finish(fill(_sizes(size, name), dtype=d), requires_grad)


def new_zeros(
    input: TensorBase, *sizes, size=None, dtype=None, device=None, requires_grad: bool = False
) -> TensorBase:
    """Zeros of ``size`` with ``input``'s dtype (unless ``dtype`` is given)."""
    check_device(device)
    return _new_like(
        input, np.zeros, _size_arg(sizes, size, "new_zeros"), dtype, requires_grad, "new_zeros"
    )


def new_ones(
    input: TensorBase, *sizes, size=None, dtype=None, device=None, requires_grad: bool = False
) -> TensorBase:
    """Ones of ``size`` with ``input``'s dtype (unless ``dtype`` is given)."""
    check_device(device)
    return _new_like(
        input, np.ones, _size_arg(sizes, size, "new_ones"), dtype, requires_grad, "new_ones"
    )


def new_empty(
    input: TensorBase, *sizes, size=None, dtype=None, device=None, requires_grad: bool = False
) -> TensorBase:
    """An uninitialised tensor of ``size`` with ``input``'s dtype (unless ``dtype`` is given)."""
    check_device(device)
    return _new_like(
        input, np.empty, _size_arg(sizes, size, "new_empty"), dtype, requires_grad, "new_empty"
    )


def new_full(
    input: TensorBase, size, fill_value, *, dtype=None, device=None, requires_grad: bool = False
) -> TensorBase:
    """``fill_value`` in a tensor of ``size`` with ``input``'s dtype (unless ``dtype`` is given)."""
    check_device(device)
    if not isinstance(fill_value, (numbers.Number, np.generic, TensorBase)):
        raise TypeError(
            f"new_full(): argument 'fill_value' must be a number, got {type_name(fill_value)}"
        )
    if isinstance(fill_value, TensorBase):
        fill_value = fill_value.item()

    def fill(shape, dtype):
        return np.full(shape, fill_value, dtype=dtype)

    return _new_like(input, fill, (size,), dtype, requires_grad, "new_full")


def new_tensor(
    input: TensorBase, data, *, dtype=None, device=None, requires_grad: bool = False
) -> TensorBase:
    """``data`` copied into a new leaf tensor with ``input``'s dtype (unless ``dtype`` is given)."""
    check_device(device)
    if isinstance(data, TensorBase):
        data = data.detach().numpy()
    return tensor(
        data, dtype=dtype if dtype is not None else input.dtype, requires_grad=requires_grad
    )
