"""Random sampling: new tensors drawn from the global generator (or ``generator=``).

``rand``, ``randn`` (uniform and normal floats, complex parts drawn independently),
``randint``, ``randperm``, the ``*_like`` forms, ``normal``, ``bernoulli``,
``multinomial``, ``poisson`` and ``binomial``. None is differentiable: a sample is a new
leaf. The generators and their NumPy streams live in ``tinyattn/random/``; the in-place
random fills (``Tensor.uniform_`` ...) are in ``fills.py``.
"""

from __future__ import annotations

import numpy as np

from ...core import _dtype as dt
from ...core.device import check_device
from ...core.tensor import Tensor
from ...foundations.type_names import type_name
from ...random import _numpy_generator
from ...random.fill import standard_normal, uniform01
from .._util import int_list
from ..creation.factories import _dtype_or_default, _finish, _sizes
from ..elementwise.arithmetic import _tensor

__all__ = [
    "rand",
    "randn",
    "randint",
    "randperm",
    "rand_like",
    "randn_like",
    "randint_like",
    "normal",
    "bernoulli",
    "multinomial",
    "poisson",
    "binomial",
]


def _random_float_dtype(dtype, name: str) -> np.dtype:
    np_dtype = _dtype_or_default(dtype)
    if np_dtype.kind not in "fc":
        raise TypeError(f"{name}(): expected a floating point dtype, got {dt.to_dtype(dtype)}")
    return np_dtype


def rand(*sizes, size=None, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
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
) -> Tensor:
    """Standard normal samples (the shape as in :func:`zeros`)."""
    check_device(device)
    shape = _sizes(int_list(sizes, size, "randn", "size"), "randn")
    np_dtype = _random_float_dtype(dtype, "randn")
    data = _random_parts(standard_normal, _numpy_generator(generator), shape, np_dtype, 0.5**0.5)
    return _finish(data, requires_grad)


def randint(low, high=None, size=None, *, generator=None, dtype=None, device=None) -> Tensor:
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
    return Tensor._make(_numpy_generator(generator).integers(low, high, shape).astype(d))


def randperm(n: int, *, generator=None, dtype=None, device=None) -> Tensor:
    d = dt.to_dtype(dtype).np_dtype if dtype is not None else np.int64
    if n < 0:
        raise RuntimeError(f"randperm(): n must be non-negative, got {n}")
    return Tensor._make(_numpy_generator(generator).permutation(n).astype(d))


def rand_like(
    input: Tensor, *, generator=None, dtype=None, device=None, requires_grad=False
) -> Tensor:
    """``rand`` of ``input``'s shape and (unless ``dtype`` is given) dtype."""
    check_device(device)
    dtype = dtype or input.dtype
    return rand(input.shape, generator=generator, dtype=dtype, requires_grad=requires_grad)


def randn_like(
    input: Tensor, *, generator=None, dtype=None, device=None, requires_grad=False
) -> Tensor:
    """``randn`` of ``input``'s shape and (unless ``dtype`` is given) dtype."""
    check_device(device)
    dtype = dtype or input.dtype
    return randn(input.shape, generator=generator, dtype=dtype, requires_grad=requires_grad)


def bernoulli(input: Tensor, p=None, *, generator=None) -> Tensor:
    probs = input._data if p is None else np.full(input._data.shape, p)
    draw = _numpy_generator(generator).random(input._data.shape) < probs
    return Tensor._make(draw.astype(input._data.dtype))


def multinomial(
    input: Tensor, num_samples: int, replacement: bool = False, *, generator=None
) -> Tensor:
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
    return Tensor._make((out if input.ndim == 2 else out[0]).astype(np.int64))


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None) -> Tensor:
    m = mean._data if isinstance(mean, Tensor) else mean
    s = std._data if isinstance(std, Tensor) else std
    shape = size if size is not None else np.broadcast_shapes(np.shape(m), np.shape(s))
    data = _numpy_generator(generator).normal(m, s, shape)
    d = (
        dt.to_dtype(dtype).np_dtype
        if dtype is not None
        else (m.dtype if isinstance(m, np.ndarray) else dt.get_default_dtype().np_dtype)
    )
    return Tensor._make(np.asarray(data, dtype=d))


def randint_like(
    input: Tensor,
    low=0,
    high=None,
    *,
    generator=None,
    dtype=None,
    device=None,
    requires_grad=False,
) -> Tensor:
    """Integers uniform on ``[low, high)`` of ``input``'s shape (``randint_like(x, high)`` too),
    in ``input``'s dtype unless ``dtype``."""
    check_device(device)
    x = _tensor(input, "randint_like")
    if high is None:
        low, high = 0, low
    if low >= high:
        raise RuntimeError(
            f"randint_like(): expected 'low' to be less than 'high', but got low={low} >= "
            f"high={high}"
        )
    np_dtype = dt.to_dtype(dtype).np_dtype if dtype is not None else x._data.dtype
    draws = _numpy_generator(generator).integers(low, high, x._data.shape)
    return _finish(draws.astype(np_dtype), requires_grad)


def _float_input(t, op: str, name: str) -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be a Tensor, not {type_name(t)}")
    if t._data.dtype.kind != "f":
        raise TypeError(
            f"{op}(): '{name}' must be a floating point tensor (as torch), got {t.dtype}"
        )
    return t


def poisson(input: Tensor, generator=None) -> Tensor:
    """Poisson samples with rates ``input`` (>= 0): ``input``'s shape and float dtype."""
    rates = _float_input(input, "poisson", "input")._data
    if np.any(rates < 0) or np.any(np.isnan(rates)):
        raise RuntimeError(
            "poisson(): invalid Poisson rate, expected every rate to be non-negative"
        )
    draws = _numpy_generator(generator).poisson(rates)
    return Tensor._make(np.asarray(draws, dtype=rates.dtype))


def binomial(count: Tensor, prob: Tensor, generator=None) -> Tensor:
    """Binomial samples of ``count`` trials with success probability ``prob`` (broadcast).

    Floating tensors; ``count`` >= 0 and ``0 <= prob <= 1`` (torch does not check these and
    returns arbitrary values; here a ValueError names them). Result: ``count``'s dtype.
    """
    n = _float_input(count, "binomial", "count")._data
    p = _float_input(prob, "binomial", "prob")._data
    if np.any(~(n >= 0)) or np.any(n != np.floor(n)):
        raise ValueError("binomial(): 'count' must hold non-negative whole numbers")
    if np.any(~((p >= 0) & (p <= 1))):
        raise ValueError("binomial(): 'prob' must lie in [0, 1]")
    try:
        shape = np.broadcast_shapes(n.shape, p.shape)
    except ValueError:
        raise RuntimeError(
            f"binomial(): count of shape {list(n.shape)} and prob of shape {list(p.shape)} do "
            "not broadcast"
        ) from None
    draws = _numpy_generator(generator).binomial(np.broadcast_to(n, shape).astype(np.int64), p)
    return Tensor._make(np.asarray(draws, dtype=n.dtype))
