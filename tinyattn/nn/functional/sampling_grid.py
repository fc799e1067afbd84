"""``affine_grid`` and ``grid_sample``: spatial transformers, 2-D (4-D input) and 3-D (5-D).

``grid[..., 0]`` is x (the last, width dim), ``grid[..., 1]`` y (height), ``grid[..., 2]`` z
(depth), each in [-1, 1] from the first to the last pixel: their centres with
``align_corners=True``, their outer edges with ``False``.

Built of differentiable ops (no new ``Function``): per spatial dim the grid coordinate is
unnormalised, padded (clamped for ``'border'``, folded for ``'reflection'``) and split into
``floor`` (a constant) and the fraction ``f`` (a function of the grid); each of the 2^d
corner pixels is gathered from the flattened input and weighted by the product of ``f`` or
``1 - f`` over the dims (``0`` outside the input for ``'zeros'``).
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np

from ...ops.elementwise.arithmetic import where
from ...tensor_api.tensor import Tensor
from .._checks import require_tensor

__all__ = ["affine_grid", "grid_sample"]

MODES = ("bilinear", "nearest", "bicubic")
PADDING_MODES = ("zeros", "border", "reflection")


def _align_corners(align_corners: bool | None) -> bool:
    if align_corners is None:
        warnings.warn(
            "grid_sample/affine_grid: align_corners defaults to False (torch's default since "
            "1.3.0); pass align_corners explicitly to silence this warning",
            UserWarning,
            stacklevel=3,
        )
        return False
    return bool(align_corners)


def _base_coords(size: int, align_corners: bool) -> np.ndarray:
    """The normalised coordinates of ``size`` pixel centres."""
    if size == 1:
        return np.zeros(1)
    c = np.linspace(-1.0, 1.0, size)
    return c if align_corners else c * (size - 1) / size


def affine_grid(theta: Tensor, size: list[int], align_corners: bool | None = None) -> Tensor:
    """Sampling grid of the affine maps ``theta`` for an output of ``size``.

    Shapes: ``theta`` (N, 2, 3) with ``size`` (N, C, H, W) -> grid (N, H, W, 2); ``theta``
    (N, 3, 4) with ``size`` (N, C, D, H, W) -> grid (N, D, H, W, 3).
    ``grid[n, h, w] = theta[n] @ (x_w, y_h, 1)`` with ``x_w``, ``y_h`` the normalised pixel
    centres (see the module docstring for ``align_corners``).

    Gradient (``base`` the (H*W, 3) homogeneous coordinates, ``g`` reshaped (N, H*W, 2))::

        d theta[n] = g[n]^T @ base

    Composes: tinyattn.matmul
    """
    require_tensor(theta, "affine_grid", "theta")
    align = _align_corners(align_corners)
    size = tuple(int(s) for s in size)
    if len(size) not in (4, 5):
        raise NotImplementedError(
            f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
            f"respectively. Got size {size}."
        )
    d = len(size) - 2
    if not theta.dtype.is_floating_point:
        raise ValueError(f"affine_grid: expected a floating theta, got dtype {theta.dtype}")
    if tuple(theta.shape) != (size[0], d, d + 1):
        raise ValueError(
            f"affine_grid: expected a batch of {d}D affine matrices of shape "
            f"[{size[0]}, {d}, {d + 1}] for size {size}, got theta of shape "
            f"{list(theta.shape)}"
        )
    if min(size) <= 0:
        raise ValueError(f"affine_grid: expected non-zero, positive output size, got {size}")
    spatial = size[2:]
    axes = [_base_coords(s, align) for s in spatial]  # (D,) H, W
    mesh = np.meshgrid(*axes, indexing="ij")  # each (*spatial)
    base = np.stack([*reversed(mesh), np.ones(spatial)], axis=-1).reshape(-1, d + 1)
    base_t = Tensor._make(base.astype(theta._data.dtype))
    grid = base_t @ theta.transpose(1, 2)  # (N, prod(spatial), d)
    return grid.reshape(size[0], *spatial, d)


def _check_grid_sample(input, grid, mode: str, padding_mode: str) -> None:
    require_tensor(input, "grid_sample")
    require_tensor(grid, "grid_sample", "grid")
    if mode not in MODES:
        raise ValueError(
            f"grid_sample: expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: "
            f"{mode!r}"
        )
    if padding_mode not in PADDING_MODES:
        raise ValueError(
            f"grid_sample: expected padding_mode to be 'zeros', 'border', or 'reflection', but "
            f"got: {padding_mode!r}"
        )
    if input.ndim not in (4, 5) or grid.ndim != input.ndim:
        raise RuntimeError(
            f"grid_sample: expected a 4D or 5D input and a grid with the same number of "
            f"dimensions, but got input with sizes {list(input.shape)} and grid with sizes "
            f"{list(grid.shape)}"
        )
    if mode == "bicubic" and input.ndim != 4:
        raise RuntimeError(
            f"grid_sample: bicubic interpolation only supports 4D input, got input with sizes "
            f"{list(input.shape)}"
        )
    if grid.shape[0] != input.shape[0]:
        raise RuntimeError(
            f"grid_sample: expected grid and input to have same batch size, but got input "
            f"with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}"
        )
    if grid.shape[-1] != input.ndim - 2:
        raise RuntimeError(
            f"grid_sample: expected grid to have size {input.ndim - 2} in last dimension, "
            f"but got grid with sizes {list(grid.shape)}"
        )
    if min(input.shape[2:]) <= 0:
        raise RuntimeError(
            f"grid_sample: expected input to have non-empty spatial dimensions, but input has "
            f"sizes {list(input.shape)}"
        )
    if input.dtype != grid.dtype or not input.dtype.is_floating_point:
        raise RuntimeError(
            f"grid_sample: input and grid must have the same floating dtype, got "
            f"{input.dtype} and {grid.dtype}"
        )


def _reflect(x: Tensor, low2: int, high2: int) -> Tensor:
    """Fold ``x`` into [low2 / 2, high2 / 2] by reflections at the ends (its gradient: +-1)."""
    if low2 == high2:
        return where(Tensor._make(np.zeros(x.shape, bool)), x, 0.0)  # constant 0
    low, span = low2 / 2, (high2 - low2) / 2
    dist = (x - low).abs()
    with np.errstate(invalid="ignore"):  # inf folds to NaN (then in _source_coord)
        flips = np.floor(dist._data / span)
        extra = dist - Tensor._make(dist._data - np.fmod(dist._data, span))  # fmod: as torch
        even = Tensor._make(flips % 2 == 0)
    return where(even, extra + low, (extra * -1.0) + (span + low))


def _source_coord(coord: Tensor, size: int, padding_mode: str, align: bool, d: int) -> Tensor:
    """Grid coordinate in [-1, 1] -> pixel coordinate, with the padding mode applied.

    Non-finite coordinates as torch's CPU kernels (which differ by ``d``): 'border' and
    'reflection' send NaN (and inf folded by 'reflection') to 0 in 2-D, to ``size - 1`` in
    3-D; in 3-D a coordinate still non-finite or beyond the int32 range samples nothing."""
    x = (coord + 1) * ((size - 1) / 2) if align else ((coord + 1) * size - 1) / 2
    if padding_mode == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if align else _reflect(x, -1, 2 * size - 1)
    if padding_mode != "zeros":
        # clamp, but with torch's gradient: 0 on the bounds too (not only past them), so a
        # grid point on the first or last pixel (affine_grid's corners) moves no grid grad;
        interior = Tensor._make((x._data > 0) & (x._data < size - 1))
        clipped = np.nan_to_num(np.clip(x._data, 0, size - 1), nan=0.0 if d == 2 else size - 1)
        x = where(interior, x, Tensor._make(clipped))
    if d == 3:
        v = x._data
        with np.errstate(invalid="ignore"):
            wild = ~np.isfinite(v) | (v > 2.0**31 - 2) | (v < -(2.0**31))
        if wild.any():
            x = where(Tensor._make(wild), Tensor._make(np.full(v.shape, -100.0, v.dtype)), x)
    return x


def _tap_index(pos: np.ndarray, size: int, padding_mode: str, align: bool):
    """Integer tap positions -> (clipped index, inside mask) under the padding mode."""
    if padding_mode == "reflection":
        low, span = (0.0, size - 1) if align else (-0.5, size)
        if span > 0:
            dist = np.abs(pos - low)
            flips, extra = np.floor(dist / span), np.fmod(dist, span)
            pos = np.where(flips % 2 == 0, extra + low, span - extra + low)
        else:
            pos = np.zeros_like(pos)
    if padding_mode != "zeros":
        pos = np.clip(pos, 0, size - 1)
    inside = (pos >= 0) & (pos <= size - 1)
    return np.clip(pos, 0, size - 1).astype(np.int64), inside


def _cubic_weights(t: Tensor) -> list[Tensor]:
    """Keys' cubic convolution weights (A = -0.75) of the 4 taps at offsets -1, 0, 1, 2."""
    a = -0.75

    def near(x):  # |x| <= 1
        return ((x * (a + 2) - (a + 3)) * x) * x + 1

    def far(x):  # 1 < |x| < 2
        return ((x * a - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _bicubic(flat, g2, spatial, padding_mode: str, align: bool) -> Tensor:
    """Sum over the 4x4 taps around each point of cubic weights times the padded taps."""
    height, width = spatial
    xs = [
        (c + 1) * ((s - 1) / 2) if align else ((c + 1) * s - 1) / 2
        for c, s in ((g2[:, :, 0], width), (g2[:, :, 1], height))
    ]
    raw = [np.nan_to_num(v._data, nan=-4.0, posinf=-4.0, neginf=-4.0) for v in xs]
    low = [np.floor(v) for v in raw]
    wx, wy = (_cubic_weights(v - Tensor._make(lo)) for v, lo in zip(xs, low))
    out = None
    for j in range(4):
        row, row_in = _tap_index(low[1] - 1 + j, height, padding_mode, align)
        for i in range(4):
            col, col_in = _tap_index(low[0] - 1 + i, width, padding_mode, align)
            mask = Tensor._make((row_in & col_in).astype(flat._data.dtype))
            term = _gather(flat, row * width + col) * (wx[i] * wy[j] * mask).unsqueeze(1)
            out = term if out is None else out + term
    return out


def _gather(flat: Tensor, index: np.ndarray) -> Tensor:
    """``flat`` (N, C, P) at the pixel ``index`` (N, Q) of each batch -> (N, C, Q)."""
    n, c, _ = flat.shape
    idx = np.broadcast_to(index[:, None, :], (n, c, index.shape[1]))
    return flat.gather(2, Tensor._make(np.ascontiguousarray(idx)))


def grid_sample(
    input: Tensor,
    grid: Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool | None = None,
) -> Tensor:
    """Samples ``input`` at the normalised locations of ``grid`` (a spatial transformer).

    Shapes: ``input`` (N, C, H, W), ``grid`` (N, H_out, W_out, 2) -> (N, C, H_out, W_out);
    ``input`` (N, C, D, H, W), ``grid`` (N, D_out, H_out, W_out, 3) -> (N, C, D_out, H_out,
    W_out). ``mode``: ``'bilinear'`` (trilinear for 5-D), ``'nearest'`` (round half to
    even) or ``'bicubic'`` (4-D only: Keys' cubic convolution, A = -0.75, over the 4x4 taps
    around the point, each tap padded on its own); ``padding_mode``: ``'zeros'``, ``'border'`` or ``'reflection'``.

    Bilinear, 2-D: ``x = unnormalise(grid[..., 0])`` (padded), ``x0 = floor(x)``, ``fx =
    x - x0`` (likewise y) and ``out = sum over corners (i, j) in {0, 1}^2 of
    wx_i wy_j input[y0 + j, x0 + i]`` with ``wx_0 = 1 - fx``, ``wx_1 = fx``. Gradient::

        d input[y0 + j, x0 + i] += wx_i wy_j g
        d fx = sum_j wy_j (input[y0 + j, x0 + 1] - input[y0 + j, x0]) . g   (summed over C)
        d grid[..., 0] = d fx * dx/dgrid   (W - 1) / 2 or W / 2, times the padding's 0/+-1

    Nearest: ``d input`` scatters ``g`` to the nearest pixel; ``d grid = 0``. Bicubic: as
    bilinear with 4 cubic weights per dim, ``d fx`` through their derivatives.

    Composes: Tensor.gather, Tensor.abs, tinyattn.where
    """
    _check_grid_sample(input, grid, mode, padding_mode)
    align = _align_corners(align_corners)
    n, c, *spatial = input.shape
    d = len(spatial)
    out_spatial = tuple(grid.shape[1:-1])
    flat = input.reshape(n, c, int(np.prod(spatial)))  # (explicit sizes: N may be 0)
    g2 = grid.reshape(n, int(np.prod(out_spatial)), d)
    # per input dim (D,) H, W: its pixel coordinate (grid components run x, y, z: reversed)
    coords = [
        _source_coord(g2[:, :, d - 1 - k], spatial[k], padding_mode, align, d) for k in range(d)
    ]
    raw = [np.nan_to_num(x._data, nan=-2.0, posinf=-2.0, neginf=-2.0) for x in coords]
    strides = [int(np.prod(spatial[k + 1 :])) for k in range(d)]
    if mode == "bicubic":
        return _bicubic(flat, g2, spatial, padding_mode, align).reshape(n, c, *out_spatial)
    if mode == "nearest":
        near = [np.rint(x) for x in raw]
        inside = np.all([(v >= 0) & (v <= s - 1) for v, s in zip(near, spatial)], axis=0)
        index = sum(
            np.clip(v, 0, s - 1).astype(np.int64) * st for v, s, st in zip(near, spatial, strides)
        )
        out = _gather(flat, index) * Tensor._make(inside[:, None, :].astype(input._data.dtype))
        nothing = Tensor._make(np.zeros(out.shape[:1] + out.shape[2:], bool))
        out = out + where(nothing, g2.sum(-1), 0.0).unsqueeze(1)  # grid in the graph, d grid = 0
        return out.reshape(n, c, *out_spatial)
    low = [np.floor(x) for x in raw]
    frac = [x - Tensor._make(lo) for x, lo in zip(coords, low)]
    out = None
    for corner in itertools.product((0, 1), repeat=d):
        pos = [lo + k for lo, k in zip(low, corner)]
        inside = np.all([(p >= 0) & (p <= s - 1) for p, s in zip(pos, spatial)], axis=0)
        index = sum(
            np.clip(p, 0, s - 1).astype(np.int64) * st for p, s, st in zip(pos, spatial, strides)
        )
        weight = Tensor._make(inside.astype(input._data.dtype))
        for f, k in zip(frac, corner):
            weight = weight * (f if k else 1 - f)
        term = _gather(flat, index) * weight.unsqueeze(1)
        out = term if out is None else out + term
    return out.reshape(n, c, *out_spatial)
