"""``interpolate``'s ``'bicubic'`` and ``'area'`` modes, and torch's deprecated ``upsample*`` names.

- bicubic (4-D input): each output reads four neighbours per dim with Keys' cubic
  convolution weights (``a = -0.75``, as torch), edge indices clamped:
  ``y[o] = sum_{t=-1..2} w_t(frac) x[clamp(floor(src) + t)]``;
  gradient ``dx = W^T g`` (``Resample``, the same op as the linear modes).
- area: adaptive average pooling to the output size (``dx[i] = sum over the windows w
  that hold i of g[w] / len(w)``).

Every other mode goes to :func:`tinyattn.nn.functional.sampling_spatial.interpolate`.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ...tensor_api.tensor import Tensor
from . import sampling_spatial as _spatial
from .pool import _adaptive_avg
from .sampling_spatial import Resample

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear"]

_CUBIC_A = -0.75


def _cubic_taps(n_in: int, n_out: int, scale, align_corners: bool, dtype):
    """Four (index, weight) taps per output position along one dim (torch's bicubic)."""
    rows = np.arange(n_out)
    if align_corners:
        src = rows * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros(n_out)
    else:
        ratio = (1.0 / scale) if scale is not None else n_in / n_out
        src = (rows + 0.5) * ratio - 0.5  # (not clamped at 0 for cubic, as torch)
    base = np.floor(src)
    t = src - base
    a = _CUBIC_A

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    weights = (far(t + 1), near(t), near(1 - t), far(2 - t))
    base = base.astype(np.int64)
    return tuple(
        (np.clip(base - 1 + k, 0, n_in - 1), w.astype(dtype)) for k, w in enumerate(weights)
    )


def _out_sizes(input: Tensor, size, scale_factor, n: int):
    if (size is None) == (scale_factor is None):
        raise ValueError(
            "interpolate: exactly one of size or scale_factor should be defined, got "
            f"size={size}, scale_factor={scale_factor}"
        )
    spatial = input.shape[2:]
    if size is not None:
        return tuple(int(s) for s in _spatial._spatial_args(size, n, "size", "interpolate")), (
            None,
        ) * n
    scales = tuple(
        float(s) for s in _spatial._spatial_args(scale_factor, n, "scale_factor", "interpolate")
    )
    return tuple(int(math.floor(d * s)) for d, s in zip(spatial, scales)), scales


def interpolate(
    input: Tensor,
    size=None,
    scale_factor=None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """Resize the spatial dims of ``(N, C, d1, ...)`` input to ``size`` or by ``scale_factor``.

    Modes: ``'nearest'``, ``'nearest-exact'``, ``'linear'`` / ``'bilinear'`` /
    ``'trilinear'`` (see :func:`tinyattn.nn.functional.sampling_spatial.interpolate`), ``'bicubic'`` (4-D;
    cubic convolution, ``a = -0.75``, ``align_corners`` as for the linear modes) and
    ``'area'`` (adaptive average pooling to the output size).

    Gradient: ``dx = W^T g`` along each spatial dim (``W``: the interpolation weights;
    for ``'area'`` the pooling windows' ``1 / len``).
    """
    if mode not in ("bicubic", "area"):
        return _spatial.interpolate(input, size, scale_factor, mode, align_corners,
                                    recompute_scale_factor, antialias)  # fmt: skip
    _spatial._check_tensor(input, "interpolate")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported")
    want = (4,) if mode == "bicubic" else (3, 4, 5)
    if input.ndim not in want:
        raise NotImplementedError(
            f"interpolate: {mode} mode needs {' or '.join(f'{d}D' for d in want)} input, got "
            f"{input.ndim}D of shape {list(input.shape)}"
        )
    if mode == "area" and align_corners is not None:
        raise ValueError(
            "interpolate: align_corners option can only be set with the interpolating modes: "
            "linear | bilinear | bicubic | trilinear (got mode 'area')"
        )
    if not input.is_floating_point():
        raise RuntimeError(f"interpolate: {mode} mode needs floating input, got {input.dtype}")
    n = input.ndim - 2
    out_sizes, scales = _out_sizes(input, size, scale_factor, n)
    if min(out_sizes) <= 0:
        raise RuntimeError(
            "interpolate: input and output sizes should be greater than 0, but got input "
            f"{list(input.shape[2:])} and output {list(out_sizes)}"
        )
    if mode == "area":
        return _adaptive_avg(input, out_sizes, n, "interpolate")
    if recompute_scale_factor:
        scales = (None,) * n
    dtype = input._data.dtype
    weights = tuple(
        (2 + i, _cubic_taps(d_in, d_out, s, bool(align_corners), dtype))
        for i, (d_in, d_out, s) in enumerate(zip(input.shape[2:], out_sizes, scales))
    )
    return Resample.apply(input, weights)


def _deprecated(name: str) -> None:
    warnings.warn(
        f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` instead.",
        stacklevel=3,
    )


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of :func:`interpolate` (warns, as torch). Gradient: interpolate's."""
    _deprecated("upsample")
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(mode='nearest')`` (warns). Gradient: interpolate's."""
    _deprecated("upsample_nearest")
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(mode='bilinear', align_corners=True)`` (warns).
    Gradient: interpolate's."""
    _deprecated("upsample_bilinear")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
