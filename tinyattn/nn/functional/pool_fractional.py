"""Fractional max pooling (Graham, 2014): max over windows placed at pseudo-random steps.

For an input of size ``n`` pooled by windows of size ``k`` into ``m`` outputs, each
(batch, channel) plane draws one sample ``u`` in [0, 1) per spatial dim
(``_random_samples``, shape (N, C, dims)) and starts its windows at torch's sequence::

    alpha = (n - k) / (m - 1)
    start[i] = floor((i + u) * alpha) - floor(u * alpha)     for i < m - 1
    start[m - 1] = n - k

computed in the input's dtype, as torch does (so float32 starts match torch's bit for
bit). The samples are read (W, H) for 2-D and (T, H, W) for 3-D, torch's order. Each
output is the max of its window (the first maximum in a tie, the last NaN when there is
one) and its index is the flat position in the input plane, for ``max_unpool``.

The values are a ``gather`` of the input at the chosen indices, so the gradient is
``gather``'s: ``dx = scatter-add of g at the indices`` (each output's gradient goes to
the element it chose); gradcheck and parity run through ``GatherBackward0``.
"""

from __future__ import annotations

import numbers

import numpy as np

from ...foundations.type_names import type_name
from ...ops.random.sampling import rand
from ...tensor_api.tensor import Tensor
from .conv import _ints

__all__ = [
    "fractional_max_pool2d",
    "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices",
]

_DIM_NAMES = {2: ("height", "width"), 3: ("time", "height", "width")}


def window_starts(sample: np.ndarray, size: int, out: int, kernel: int) -> np.ndarray:
    """Window starts for each plane: ``sample`` (P,) in the input dtype -> (P, out) int64."""
    dtype = sample.dtype.type
    starts = np.empty(sample.shape + (out,), dtype=np.int64)
    if out > 1:
        alpha = dtype(size - kernel) / dtype(out - 1)
        steps = np.arange(out - 1).astype(sample.dtype)
        first = (sample * alpha).astype(np.int64)
        starts[:, :-1] = ((steps[None, :] + sample[:, None]) * alpha).astype(np.int64)
        starts[:, :-1] -= first[:, None]
    if out > 0:
        starts[:, -1] = size - kernel
    return starts


def _window_indices(samples: np.ndarray, spatial, outs, kernel) -> np.ndarray:
    """Flat input positions of every window element: (P, *outs, prod(kernel)).

    ``samples`` (P, n) in torch's order, reordered here to the spatial dims.
    """
    n = len(spatial)
    order = (1, 0) if n == 2 else (0, 1, 2)  # 2-D samples are (w, h)
    strides = np.cumprod((1,) + tuple(spatial[::-1]))[:-1][::-1]  # row-major
    planes = samples.shape[0]
    flat = np.zeros((planes,) + tuple(outs) + tuple(kernel), dtype=np.int64)
    for d in range(n):
        starts = window_starts(samples[:, order[d]], spatial[d], outs[d], kernel[d])
        pos = starts[:, :, None] + np.arange(kernel[d])  # (P, out_d, k_d)
        shape = [planes] + [1] * (2 * n)
        shape[1 + d], shape[1 + n + d] = outs[d], kernel[d]
        flat = flat + (pos * strides[d]).reshape(shape)
    return flat.reshape((planes,) + tuple(outs) + (int(np.prod(kernel)),))


def _argmax_first_max_last_nan(values: np.ndarray) -> np.ndarray:
    """Index along the last axis of torch's choice: the last NaN, else the first maximum."""
    nan = np.isnan(values)
    last_nan = values.shape[-1] - 1 - np.argmax(nan[..., ::-1], axis=-1)
    first_max = np.argmax(np.where(nan, -np.inf, values), axis=-1)
    return np.where(nan.any(axis=-1), last_nan, first_max)


def _output_size(x: Tensor, output_size, output_ratio, n: int, op: str) -> tuple[int, ...]:
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    if output_size is not None:
        if isinstance(output_size, (tuple, list)) and len(output_size) not in (1, n):
            raise RuntimeError(f"{op}: output_size must either be a single Int or tuple of Ints")
        outs = _ints(output_size, n, "output_size", op)
        if min(outs) < 0:
            raise RuntimeError(f"{op}: output_size must be non-negative, got {output_size}")
        return outs
    if not isinstance(output_ratio, (tuple, list)):  # torch's functional form: len() fails
        raise TypeError(
            f"{op}: output_ratio must be a tuple of {n} floats in (0, 1), got "
            f"{type_name(output_ratio)} {output_ratio!r}"
        )
    ratio = tuple(output_ratio) * n if len(output_ratio) == 1 else tuple(output_ratio)
    if len(ratio) != n or not all(isinstance(r, numbers.Real) for r in ratio):
        raise ValueError(
            f"{op} requires output_ratio to either be a single Int or tuple of Ints, got "
            f"{output_ratio!r}"
        )
    return tuple(int(s * r) for s, r in zip(x.shape[-n:], ratio))


def _check_input(input, n: int, op: str) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be a Tensor, not {type_name(input)}")
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(
            f"{op}(): Expected {n + 1}D or {n + 2}D tensor, but got shape {list(input.shape)}"
        )
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"{op}(): expected a floating point input, got {input.dtype}")
    for d in range(input.ndim - n - 1, input.ndim):
        if input.shape[d] == 0:
            raise RuntimeError(
                f"{op}(): Expected input to have non-zero size for non-batch dimensions, but "
                f"got{list(input.shape)} with dimension {d} being empty."
            )


def _check_samples(samples, x: Tensor, n: int, op: str) -> np.ndarray:
    """The (N, C, n) samples as an array, checked as torch does (plus their range)."""
    if not isinstance(samples, Tensor):
        raise TypeError(
            f"{op}(): argument '_random_samples' must be a Tensor, not {type_name(samples)}"
        )
    if samples.ndim != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.ndim}")
    if samples.shape[0] < x.shape[0]:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != x.shape[1]:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != n:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {n}; got {samples.shape[2]}.")
    if samples.dtype != x.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    arr = samples._data[: x.shape[0]]
    if arr.size and not ((arr >= 0) & (arr < 1)).all():  # out of [0, 1): windows off the input
        raise RuntimeError(
            f"{op}(): _random_samples must lie in [0, 1), got values from {arr.min()} to "
            f"{arr.max()}"
        )
    return arr


def _fractional(input, kernel_size, output_size, output_ratio, samples, n: int, op: str):
    _check_input(input, n, op)
    kernel = _ints(kernel_size, n, "kernel_size", op)
    if min(kernel) < 1:
        raise RuntimeError(f"{op}(): kernel_size must be positive, got {kernel_size}")
    outs = _output_size(input, output_size, output_ratio, n, op)
    unbatched = input.ndim == n + 1
    x = input.unsqueeze(0) if unbatched else input
    spatial = tuple(x.shape[2:])
    for name, o, k, s in zip(_DIM_NAMES[n], outs, kernel, spatial):
        if o + k - 1 > s:
            suffix = "_out" if n == 3 else ""
            raise RuntimeError(
                f"fractional_max_pool{n}d{suffix}(): pool {name} {k} too large relative to "
                f"input {name} {s}"
            )
    if samples is None:
        samples = rand(x.shape[0], x.shape[1], n, dtype=x.dtype)
    arr = _check_samples(samples, x, n, op)
    batch, channels = x.shape[:2]
    windows = _window_indices(arr.reshape(batch * channels, n), spatial, outs, kernel)
    planes = x._data.reshape(batch * channels, int(np.prod(spatial)))
    out_count, window_count = int(np.prod(outs)), int(np.prod(outs)) * int(np.prod(kernel))
    values = np.take_along_axis(planes, windows.reshape(batch * channels, window_count), axis=1)
    choice = _argmax_first_max_last_nan(values.reshape(windows.shape))
    index = np.take_along_axis(windows, choice[..., None], axis=-1)
    index = index.reshape(batch, channels, out_count)  # (explicit sizes: any may be 0)
    flat = x.reshape(batch, channels, int(np.prod(spatial)))
    out = flat.gather(2, Tensor._make(index)).reshape(batch, channels, *outs)
    indices = Tensor._make(index.reshape(batch, channels, *outs))
    if unbatched:
        out, indices = out.squeeze(0), indices.squeeze(0)
    return out, indices


def fractional_max_pool2d_with_indices(
    input: Tensor,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """2-D fractional max pooling returning ``(output, indices)``.

    ``input`` (N, C, H, W) or (C, H, W) -> (N, C, oH, oW); ``output_size`` (oH, oW), or
    ``output_ratio`` (rH, rW) with ``oH = int(H * rH)``; ``_random_samples`` (N, C, 2),
    read (w, h), drawn uniformly in [0, 1) when not given. ``indices`` are flat positions
    ``h * W + w`` into each input plane.

    Gradient: ``dx = scatter-add of g at indices`` (each output's gradient goes to its max).
    """
    return _fractional(
        input,
        kernel_size,
        output_size,
        output_ratio,
        _random_samples,
        2,
        "fractional_max_pool2d",
    )


def fractional_max_pool2d(
    input: Tensor,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
):
    """2-D fractional max pooling: the output, or ``(output, indices)`` if ``return_indices``.

    See :func:`fractional_max_pool2d_with_indices`. Gradient: ``dx = scatter-add of g at
    the chosen indices``.
    """
    out, indices = fractional_max_pool2d_with_indices(
        input, kernel_size, output_size, output_ratio, return_indices, _random_samples
    )
    return (out, indices) if return_indices else out


def fractional_max_pool3d_with_indices(
    input: Tensor,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """3-D fractional max pooling returning ``(output, indices)``.

    ``input`` (N, C, T, H, W) or (C, T, H, W) -> (N, C, oT, oH, oW); ``_random_samples``
    (N, C, 3), read (t, h, w). ``indices`` are flat positions ``(t * H + h) * W + w``.

    Gradient: ``dx = scatter-add of g at indices``.
    """
    return _fractional(
        input,
        kernel_size,
        output_size,
        output_ratio,
        _random_samples,
        3,
        "fractional_max_pool3d",
    )


def fractional_max_pool3d(
    input: Tensor,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
):
    """3-D fractional max pooling: the output, or ``(output, indices)`` if ``return_indices``.

    Gradient: ``dx = scatter-add of g at the chosen indices``.
    """
    out, indices = fractional_max_pool3d_with_indices(
        input, kernel_size, output_size, output_ratio, return_indices, _random_samples
    )
    return (out, indices) if return_indices else out
