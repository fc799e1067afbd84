"""Spatial functions of ``nn.functional``: pad (all modes), interpolate, unfold and fold.

Each is a linear map of its input, so each backward is the adjoint map (an op of
its own: ``xp.apply`` runs its forward on arrays, or records it under
``create_graph``, so the gradient is differentiable too):

- pad (reflect / replicate / circular): ``y = x[source]`` along each padded dim;
  the gradient adds ``g`` back into the source positions.
- interpolate: ``y = W x`` along each spatial dim (``W``: out x in, one or two
  non-zeros per row); the gradient is ``W^T g``.
- unfold (im2col) copies patches out; fold (col2im) adds patches back in. Each is
  the other's adjoint, so one is the other's backward.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ...core.function import Function
from ...tensor_api.tensor import Tensor
from .._checks import require_tensor as _check_tensor

__all__ = ["pad", "interpolate", "unfold", "fold"]


# -- pad ----------------------------------------------------------------------------------------


class ConstantPad(Function):
    """Pad (or crop, for negative amounts) each dim with a constant.

    y[dst] = x[src] and y = value elsewhere.   dx[src] = g[dst], dx = 0 where cropped away
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, src, dst, out_shape, value):
        y = np.full(out_shape, value, dtype=x.dtype)
        y[dst] = x[src]
        ctx.src, ctx.dst, ctx.in_shape = src, dst, x.shape
        return y

    @staticmethod
    def backward(ctx, g):
        # the adjoint of a pad is a pad (a crop): from dst back to src, zeros elsewhere
        dx = ctx.xp.apply(ConstantPad, g, ctx.dst, ctx.src, ctx.in_shape, 0)
        return dx, None, None, None, None


class IndexPad(Function):
    """y = x[source_d] along each padded dim d (reflect, replicate or circular padding).

    dx = g added back at the source positions (an element copied k times gets k terms)
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, sources):
        ctx.sources, ctx.in_shape = sources, x.shape
        for dim, source in sources:
            x = np.take(x, source, axis=dim)
        return x

    @staticmethod
    def backward(ctx, g):
        for dim, source in reversed(ctx.sources):
            shape = tuple(g.shape)
            shape = shape[:dim] + (ctx.in_shape[dim],) + shape[dim + 1 :]
            g = ctx.xp.add_at_axis(shape, dim, source, g)
        return g, None


def _source_positions(size: int, lo: int, hi: int, mode: str) -> np.ndarray:
    """Input position of each output position for one padded dim of ``size`` elements."""
    s = np.arange(-lo, size + hi)
    if mode == "reflect":  # mirror about the edge elements (which are not repeated)
        s = np.abs(s)
        return np.where(s >= size, 2 * (size - 1) - s, s)
    if mode == "replicate":
        return np.clip(s, 0, size - 1)
    # circular, as torch: negative amounts crop first, then the cropped core wraps around
    start, length = max(-lo, 0), size - max(-lo, 0) - max(-hi, 0)
    return start + (np.arange(length + max(lo, 0) + max(hi, 0)) - max(lo, 0)) % max(length, 1)


def pad(input: Tensor, pad, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad trailing dims: ``pad = (last_lo, last_hi, second_last_lo, second_last_hi, ...)``.

    ``mode``: ``'constant'`` (fill with ``value``, any number of dims; negative amounts
    crop), or ``'reflect'`` (mirror, pad < size), ``'replicate'`` (repeat the edge) and
    ``'circular'`` (wrap around, pad <= size), which pad the last 1, 2 or 3 dims of a
    (batched) input with one or two leading dims, as in torch.

    Gradient: constant: ``d input = g`` cropped back to the input's region; others:
    ``d input[i] = sum of g over the output positions that copied input position i``.
    """
    _check_tensor(input, "pad")
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise ValueError(f"pad: padding length must be divisible by 2, got {len(pad)}")
    if mode == "constant":
        return _constant_pad(input, pad, value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(
            f"pad: unrecognised padding mode {mode!r} (expected 'constant', 'reflect', "
            "'replicate' or 'circular')"
        )
    if value is not None and value != 0:
        raise ValueError(f"pad: padding mode {mode!r} doesn't take in value argument")
    k = len(pad) // 2
    if k not in (1, 2, 3) or input.ndim not in (k + 1, k + 2):
        raise NotImplementedError(
            f"pad: padding size {len(pad)} is not supported for {input.ndim}D input tensor "
            f"in mode {mode!r} (it pads the last {k} dims of a {k + 1}D or {k + 2}D input)"
        )
    sources = []
    for j in range(k):
        dim = input.ndim - 1 - j
        lo, hi, size = pad[2 * j], pad[2 * j + 1], input.shape[dim]
        if size == 0:
            raise RuntimeError(
                f"pad: mode {mode!r} needs non-empty padded dims, got input shape "
                f"{list(input.shape)}"
            )
        core = size - max(-lo, 0) - max(-hi, 0)  # circular wraps around the cropped core
        limit_amount = size - 1 if mode == "reflect" else core
        if mode != "replicate" and max(lo, hi) > limit_amount:
            limit = "less than" if mode == "reflect" else "at most"
            raise RuntimeError(
                f"pad: padding size should be {limit} the corresponding input dimension in "
                f"mode {mode!r}, but got padding ({lo}, {hi}) at dimension {dim} of input "
                f"{list(input.shape)}"
            )
        if size + lo + hi < 0:
            raise RuntimeError(
                f"pad: the input size {size} of dim {dim} plus padding ({lo}, {hi}) is negative"
            )
        sources.append((dim, _source_positions(size, lo, hi, mode)))
    return IndexPad.apply(input, tuple(sources))


def _constant_pad(input: Tensor, pad: tuple, value) -> Tensor:
    if len(pad) // 2 > input.ndim:
        raise ValueError(
            f"pad: padding length must be even and at most 2 * input.dim() = {2 * input.ndim}, "
            f"got {len(pad)} (input shape {list(input.shape)})"
        )
    src, dst, out_shape = [], [], []
    n_padded = len(pad) // 2
    for d, size in enumerate(input.shape):
        j = input.ndim - 1 - d  # pad pairs start at the last dim
        lo, hi = (pad[2 * j], pad[2 * j + 1]) if j < n_padded else (0, 0)
        new = size + lo + hi
        if new < 0:
            raise RuntimeError(
                f"pad: the input size {size} of dim {d} plus padding ({lo}, {hi}) is negative "
                f"(input shape {list(input.shape)}, pad {list(pad)})"
            )
        length = max(size - max(-lo, 0) - max(-hi, 0), 0)
        src.append(slice(max(-lo, 0), max(-lo, 0) + length))
        dst.append(slice(max(lo, 0), max(lo, 0) + length))
        out_shape.append(new)
    fill = 0 if value is None else value
    return ConstantPad.apply(input, tuple(src), tuple(dst), tuple(out_shape), fill)


# -- interpolate ------------------------------------------------------------------------------

_LINEAR_MODES = {"linear": 3, "bilinear": 4, "trilinear": 5}


class Resample(Function):
    """y[.., o, ..] = sum_t w_t[o] x[.., i_t[o], ..] along each spatial dim (one tap for the
    nearest modes, two for the linear ones: torch's formula ``w0 x[i0] + w1 x[i1]``).

    dx[.., i, ..] = sum over (t, o) with i_t[o] = i of w_t[o] g[.., o, ..], dims in reverse
    order. Gathering taps (rather than multiplying by a dense interpolation matrix) keeps
    a NaN or inf input from leaking into outputs that do not read it, as in torch.
    """

    @staticmethod
    def forward(ctx, x, weights):
        if ctx is not None:
            ctx.weights = weights  # ((dim, ((index, weight or None), ...)), ...)
            ctx.sizes = []
        for dim, taps in weights:
            if ctx is not None:
                ctx.sizes.append(x.shape[dim])
            shape = [1] * x.ndim
            shape[dim] = -1
            y = None
            for index, w in taps:
                part = np.take(x, index, axis=dim)
                if w is not None:
                    part = w.reshape(shape) * part
                y = part if y is None else y + part
            x = y
        return x

    supports_create_graph = True

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        for (dim, taps), n_in in zip(reversed(ctx.weights), reversed(ctx.sizes)):
            shape = list(g.shape)
            shape[dim] = n_in
            spread = [1] * len(shape)  # a tap's weights run along ``dim``
            spread[dim] = -1
            dx = None
            for index, w in taps:  # each tap scatters its share of g back to its inputs
                part = g if w is None else g * w.reshape(spread)
                term = xp.add_at_axis(tuple(shape), dim, index, part)
                dx = term if dx is None else dx + term
            g = dx
        return g, None


def _resample_taps(n_in: int, n_out: int, scale, mode: str, align_corners: bool, dtype):
    """The input positions (and weights) each output position reads along one dim."""
    rows = np.arange(n_out)
    # torch's source-to-output ratio: 1 / scale_factor when given, else in / out
    ratio = (1.0 / scale) if scale is not None else n_in / n_out
    if mode in ("nearest", "nearest-exact"):
        offset = 0.5 if mode == "nearest-exact" else 0.0
        src = np.minimum(np.floor((rows + offset) * ratio).astype(np.int64), n_in - 1)
        return ((src, None),)
    if align_corners:
        src = rows * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros(n_out)
    else:
        src = np.maximum((rows + 0.5) * ratio - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    frac = (src - i0).astype(dtype)
    return ((i0, (1 - frac).astype(dtype)), (i1, frac))


def _spatial_args(value, n: int, name: str, op: str) -> tuple:
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(
                f"{op}: {name} must have one entry per spatial dim ({n}), got {tuple(value)}"
            )
        return tuple(value)
    return (value,) * n


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

    Modes: ``'nearest'`` (source ``floor(i * in / out)``), ``'nearest-exact'``,
    ``'linear'`` (3-D input), ``'bilinear'`` (4-D), ``'trilinear'`` (5-D). For the linear
    modes, ``align_corners=True`` maps the corner pixels' centres onto each other
    (``src = i (in - 1) / (out - 1)``); False (default) maps pixel edges
    (``src = (i + 0.5) in / out - 0.5``, clamped at 0).

    Gradient (``Resample``): each output's gradient added back, times its weight, into the
    input positions it read (``dx = W^T g`` along each spatial dim).
    """
    _check_tensor(input, "interpolate")
    supported = ("nearest", "nearest-exact", *_LINEAR_MODES)
    if mode not in supported:
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported ({supported})")
    if align_corners is not None and mode not in _LINEAR_MODES:
        raise ValueError(
            "interpolate: align_corners option can only be set with the interpolating modes: "
            f"linear | bilinear | trilinear (got mode {mode!r})"
        )
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported")
    if input.ndim not in (3, 4, 5):
        raise NotImplementedError(
            f"interpolate: only 3D, 4D and 5D (N, C, d1, ...) input is supported, got "
            f"{input.ndim}D of shape {list(input.shape)}"
        )
    if mode in _LINEAR_MODES and input.ndim != _LINEAR_MODES[mode]:
        raise NotImplementedError(
            f"interpolate: got {input.ndim}D input, but {mode} mode needs "
            f"{_LINEAR_MODES[mode]}D input"
        )
    if (size is None) == (scale_factor is None):
        raise ValueError(
            "interpolate: exactly one of size or scale_factor should be defined, got "
            f"size={size}, scale_factor={scale_factor}"
        )
    spatial = input.shape[2:]
    n = len(spatial)
    if size is not None:
        out_sizes = tuple(int(s) for s in _spatial_args(size, n, "size", "interpolate"))
        scales = (None,) * n
    else:
        scales = tuple(float(s) for s in _spatial_args(scale_factor, n, "scale_factor", "x"))
        out_sizes = tuple(int(math.floor(d * s)) for d, s in zip(spatial, scales))
        if recompute_scale_factor:
            scales = (None,) * n
    for d_in, d_out in zip(spatial, out_sizes):
        if d_in <= 0 or d_out <= 0:
            raise RuntimeError(
                "interpolate: input and output sizes should be greater than 0, but got input "
                f"{list(spatial)} and output {list(out_sizes)}"
            )
    dtype = input._data.dtype
    if dtype.kind != "f":
        if mode in _LINEAR_MODES:
            raise RuntimeError(f"interpolate: {mode} mode needs floating input, got {input.dtype}")
        dtype = np.dtype(np.float64)  # nearest: exact copies, cast back below
    weights = tuple(
        (2 + i, _resample_taps(d_in, d_out, s, mode, bool(align_corners), dtype))
        for i, (d_in, d_out, s) in enumerate(zip(spatial, out_sizes, scales))
    )
    if input._data.dtype.kind != "f":
        return Tensor._make(Resample.forward(None, input._data, weights).astype(input._data.dtype))
    return Resample.apply(input, weights)


# -- unfold / fold (im2col / col2im) ----------------------------------------------------------


def _pair(value, name: str, op: str) -> tuple[int, int]:
    if isinstance(value, numbers.Integral):
        return (int(value), int(value))
    value = tuple(int(v) for v in value)
    if len(value) != 2:
        raise ValueError(f"{op}: {name} must be an int or a pair of ints, got {value}")
    return value


def _patch_grid(spatial, kernel, dilation, padding, stride, op: str):
    """Row and column indices into the padded input: R (kh, OH), C (kw, OW)."""
    for name, v, least in (
        ("kernel_size", kernel, 1),
        ("dilation", dilation, 1),
        ("stride", stride, 1),
        ("padding", padding, 0),
    ):
        if min(v) < least:
            word = "greater than zero" if least else "non-negative"
            raise RuntimeError(f"{op}: {name} should be {word}, but got {name}={v}")
    blocks = tuple(
        (s + 2 * p - d * (k - 1) - 1) // st + 1
        for s, k, d, p, st in zip(spatial, kernel, dilation, padding, stride)
    )
    if min(blocks) < 1:
        raise RuntimeError(
            f"{op}: given input with spatial size {tuple(spatial)}, kernel_size={kernel}, "
            f"dilation={dilation}, padding={padding}, stride={stride}, the calculated shape of "
            f"the array of sliding blocks is {blocks}, but its components must be at least one"
        )
    grids = [
        (np.arange(k) * d)[:, None] + (np.arange(b) * st)[None, :]
        for k, d, b, st in zip(kernel, dilation, blocks, stride)
    ]
    return grids[0][:, None, :, None], grids[1][None, :, None, :], blocks


def _im2col(x, rows, cols, padding):
    """(N, C, H, W) -> (N, C * kh * kw, L): each block's values, channel-major."""
    ph, pw = padding
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    patches = xp[:, :, rows, cols]  # (N, C, kh, kw, OH, OW)
    n, c, kh, kw, oh, ow = patches.shape
    return patches.reshape(n, c * kh * kw, oh * ow)


def _col2im(cols, rows, cols_idx, padding, out_hw, channels):
    """(N, C * kh * kw, L) -> (N, C, H, W): each block added back in place (the adjoint)."""
    ph, pw = padding
    kh, kw = rows.shape[0], cols_idx.shape[1]
    oh, ow = rows.shape[2], cols_idx.shape[3]
    n = cols.shape[0]
    out = np.zeros((n, channels, out_hw[0] + 2 * ph, out_hw[1] + 2 * pw), dtype=cols.dtype)
    patches = cols.reshape(n, channels, kh, kw, oh, ow)
    np.add.at(out, (slice(None), slice(None), rows, cols_idx), patches)
    return out[:, :, ph : ph + out_hw[0], pw : pw + out_hw[1]]


class Im2Col(Function):
    """cols[n, (c, i, j), l] = x_padded[n, c, oh*sh + i*dh, ow*sw + j*dw]   (im2col).

    dx = col2im(g): each block's gradient added back where the block came from
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, rows, cols, padding):
        ctx.args = (rows, cols, padding, x.shape[2:], x.shape[1])
        return _im2col(x, rows, cols, padding)

    @staticmethod
    def backward(ctx, g):
        return ctx.xp.apply(Col2Im, g, *ctx.args), None, None, None


class Col2Im(Function):
    """y = col2im(cols): blocks summed into an (N, C, H, W) output (overlaps add up).

    dcols = im2col(g)
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, rows, cols, padding, out_hw, channels):
        ctx.args = (rows, cols, padding)
        return _col2im(x, rows, cols, padding, out_hw, channels)

    @staticmethod
    def backward(ctx, g):
        return ctx.xp.apply(Im2Col, g, *ctx.args), None, None, None, None, None


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Sliding blocks of ``(N, C, H, W)`` (or ``(C, H, W)``) input as columns:
    ``(N, C * kh * kw, L)`` with L the number of blocks (im2col).

    Gradient: ``d input = fold(g)`` (overlapping blocks add up).
    """
    _check_tensor(input, "unfold")
    if input.ndim not in (3, 4):
        raise RuntimeError(
            f"unfold: expected a 3D (unbatched) or 4D (batched) input, got shape "
            f"{list(input.shape)}"
        )
    x = input if input.ndim == 4 else input.unsqueeze(0)
    args = [
        _pair(v, n, "unfold")
        for v, n in (
            (kernel_size, "kernel_size"),
            (dilation, "dilation"),
            (padding, "padding"),
            (stride, "stride"),
        )
    ]
    rows, cols, _ = _patch_grid(x.shape[2:], *args, "unfold")
    out = Im2Col.apply(x, rows, cols, args[2])
    return out if input.ndim == 4 else out.squeeze(0)


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Sum columns ``(N, C * kh * kw, L)`` (or unbatched) back into ``(N, C, *output_size)``:
    the adjoint of :func:`unfold` (col2im); overlapping blocks add up.

    Gradient: ``d input = unfold(g)``.
    """
    _check_tensor(input, "fold")
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"fold: expected a 2D (unbatched) or 3D (batched) input, got shape {list(input.shape)}"
        )
    x = input if input.ndim == 3 else input.unsqueeze(0)
    out_hw = _pair(output_size, "output_size", "fold")
    kernel = _pair(kernel_size, "kernel_size", "fold")
    dil, pad_, stride_ = (
        _pair(v, n, "fold")
        for v, n in ((dilation, "dilation"), (padding, "padding"), (stride, "stride"))
    )
    per_block = kernel[0] * kernel[1]
    if x.shape[1] % per_block:
        raise RuntimeError(
            f"fold: expected size of input's dimension 1 to be divisible by the product of "
            f"kernel_size, but got input.size(1)={x.shape[1]} and kernel_size={kernel}"
        )
    rows, cols, blocks = _patch_grid(out_hw, kernel, dil, pad_, stride_, "fold")
    if x.shape[2] != blocks[0] * blocks[1]:
        raise RuntimeError(
            f"fold: given output_size={out_hw}, kernel_size={kernel}, dilation={dil}, "
            f"padding={pad_}, stride={stride_}, expected size of input's dimension 2 to match "
            f"the calculated number of sliding blocks {blocks[0]} * {blocks[1]} = "
            f"{blocks[0] * blocks[1]}, but got input.size(2)={x.shape[2]}"
        )
    out = Col2Im.apply(x, rows, cols, pad_, out_hw, x.shape[1] // per_block)
    return out if input.ndim == 3 else out.squeeze(0)
