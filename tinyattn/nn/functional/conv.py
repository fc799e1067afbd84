"""``conv1d`` / ``conv2d`` / ``conv3d``: cross-correlation built on :func:`unfold` (im2col)
and a matmul.

For ``groups = g`` the input channels are split into ``g`` blocks of ``C / g`` and the
output channels into ``g`` blocks of ``O / g``; block ``j`` of the output sees block ``j``
of the input only:

    cols = unfold(pad(x), kernel, dilation, stride)        (N, C * kh * kw, L)
    out[n, j] = W_j @ cols[n, j]                            W_j: (O/g, C/g * kh * kw)

A ``conv3d`` is a sum over the kernel's depth taps of ``conv2d``s, each over the depth
slices that tap reads (stacked into the batch):

    out[:, :, t] = sum_i conv2d(x[:, :, t * s_d + i * d_d], W[:, :, i])

No new ``Function``: the gradients are those of ``pad`` (crop), ``unfold`` (fold),
slicing and ``matmul``/``reshape``, each gradchecked on its own.
"""

from __future__ import annotations

import numbers

from ...foundations.type_names import type_name
from ...tensor_api.tensor import Tensor
from .sampling_spatial import pad, unfold

__all__ = ["conv1d", "conv2d", "conv3d"]

PADDING_STRINGS = ("same", "valid")


def _ints(value, n: int, name: str, op: str) -> tuple[int, ...]:
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return (int(value),) * n
    if isinstance(value, (tuple, list)) and all(
        isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in value
    ):
        if len(value) == 1:
            return (int(value[0]),) * n
        if len(value) == n:
            return tuple(int(v) for v in value)
    raise ValueError(f"{op}: argument '{name}' must be an int or {n} ints, got {value!r}")


def _padding(padding, kernel, dilation, stride, op: str) -> list[tuple[int, int]]:
    """(low, high) zero padding per spatial dim; 'same' puts the odd extra one at the end."""
    n = len(kernel)
    if isinstance(padding, str):
        if padding not in PADDING_STRINGS:
            raise ValueError(
                f"{op}: invalid padding string {padding!r}, should be one of {PADDING_STRINGS}"
            )
        if padding == "valid":
            return [(0, 0)] * n
        if any(s != 1 for s in stride):
            raise ValueError(f"{op}: padding='same' is not supported for strided convolutions")
        total = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return [(t // 2, t - t // 2) for t in total]
    p = _ints(padding, n, "padding", op)
    if min(p) < 0:
        raise RuntimeError(f"{op}: negative padding is not supported, got padding={p}")
    return [(v, v) for v in p]


def _check_conv_args(input, weight, bias, groups, n: int, op: str) -> None:
    """Types, ranks, groups, dtypes, channels and bias shape of a convolution's arguments."""
    for name, t in (("input", input), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: argument '{name}' must be a Tensor, got {type_name(t)}")
    if weight.ndim != n + 2:
        raise RuntimeError(
            f"{op}: expected a {n + 2}D weight (out_channels, in_channels/groups, *kernel), "
            f"got shape {list(weight.shape)}"
        )
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(
            f"{op}: expected a {n + 1}D (unbatched) or {n + 2}D (batched) input, got shape "
            f"{list(input.shape)}"
        )
    if not isinstance(groups, numbers.Integral) or isinstance(groups, bool) or groups < 1:
        raise RuntimeError(f"{op}: non-positive groups is not supported, got groups={groups!r}")
    if input.dtype != weight.dtype or (bias is not None and bias.dtype != weight.dtype):
        raise RuntimeError(
            f"{op}: input dtype {input.dtype}, weight dtype {weight.dtype}"
            + (f" and bias dtype {bias.dtype}" if bias is not None else "")
            + " must be the same"
        )
    if not input.is_floating_point():
        raise RuntimeError(f"{op}: expected floating point input and weight, got {input.dtype}")
    shape = list(input.shape) if input.ndim == n + 2 else [1, *input.shape]
    out_ch, in_per_group = weight.shape[0], weight.shape[1]
    if shape[1] != in_per_group * groups or out_ch % groups:
        raise RuntimeError(
            f"{op}: given groups={groups}, weight of size {list(weight.shape)}, expected "
            f"input{shape} to have {in_per_group * groups} channels, but got "
            f"{shape[1]} channels instead"
            + (f" (and out_channels={out_ch} must divide by groups)" if out_ch % groups else "")
        )
    if bias is not None and tuple(bias.shape) != (out_ch,):
        raise RuntimeError(f"{op}: expected bias of shape [{out_ch}], got {list(bias.shape)}")


def _conv(input, weight, bias, stride, padding, dilation, groups, n: int, op: str) -> Tensor:
    """Checked arguments -> pad, im2col (``unfold``), one grouped matmul, bias."""
    _check_conv_args(input, weight, bias, groups, n, op)
    x = input if input.ndim == n + 2 else input.unsqueeze(0)
    out_ch = weight.shape[0]
    kernel = tuple(weight.shape[2:])
    stride = _ints(stride, n, "stride", op)
    dilation = _ints(dilation, n, "dilation", op)
    if min(stride) < 1 or min(dilation) < 1:
        raise RuntimeError(
            f"{op}: stride and dilation must be positive, got stride={stride}, dilation={dilation}"
        )
    pads = _padding(padding, kernel, dilation, stride, op)
    if n == 3:
        out = _conv3d_by_depth(x, weight, pads, stride, dilation, groups, op)
        if bias is not None:
            out = out + bias.reshape(1, out_ch, 1, 1, 1)
        return out if input.ndim == 5 else out.squeeze(0)
    if n == 1:  # a conv1d is a conv2d over a height-1 image
        x = x.unsqueeze(2)
        weight = weight.unsqueeze(2)
        kernel, stride, dilation, pads = (1, *kernel), (1, *stride), (1, *dilation), [(0, 0), *pads]
    flat = [v for lo_hi in reversed(pads) for v in lo_hi]  # pad() lists the last dim first
    if any(flat):
        x = pad(x, flat)
    batch, channels, height, width = x.shape
    out_hw = [
        (s - d * (k - 1) - 1) // st + 1
        for s, k, d, st in zip((height, width), kernel, dilation, stride)
    ]
    if min(out_hw) < 1:
        raise RuntimeError(
            f"{op}: the input (padded spatial size {(height, width)[2 - n :]}) is smaller than "
            f"the dilated kernel {tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))[2 - n :]}"
        )
    cols = unfold(x, kernel, dilation=dilation, padding=0, stride=stride)  # (N, C*kh*kw, L)
    # (explicit sizes, not -1: an empty batch has nothing to infer a -1 from)
    cols = cols.reshape(
        batch, groups, (channels // groups) * kernel[0] * kernel[1], out_hw[0] * out_hw[1]
    )
    w = weight.reshape(groups, out_ch // groups, -1)
    out = (w @ cols).reshape(batch, out_ch, *out_hw)  # (N, g, O/g, L) -> (N, O, OH, OW)
    if bias is not None:
        out = out + bias.reshape(1, out_ch, 1, 1)
    if n == 1:
        out = out.squeeze(2)
    return out if input.ndim == n + 2 else out.squeeze(0)


def _conv3d_by_depth(x, weight, pads, stride, dilation, groups: int, op: str) -> Tensor:
    """Padded (N, C, D, H, W) input -> the sum over depth taps ``i`` of a ``conv2d`` of the
    depth slices ``t * s_d + i * d_d`` (folded into the batch) with ``weight[:, :, i]``."""
    flat = [v for lo_hi in reversed(pads) for v in lo_hi]
    if any(flat):
        x = pad(x, flat)
    batch, channels, *size = x.shape
    kernel = tuple(weight.shape[2:])
    out_size = [
        (s - d * (k - 1) - 1) // st + 1 for s, k, d, st in zip(size, kernel, dilation, stride)
    ]
    if min(out_size) < 1:
        raise RuntimeError(
            f"{op}: the input (padded spatial size {tuple(size)}) is smaller than the dilated "
            f"kernel {tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))}"
        )
    depth = out_size[0]
    out = None
    for i in range(kernel[0]):
        start = i * dilation[0]
        taps = x[:, :, start : start + stride[0] * (depth - 1) + 1 : stride[0]]  # (N, C, D', H, W)
        taps = taps.permute(0, 2, 1, 3, 4).reshape(batch * depth, channels, *size[1:])
        term = _conv(taps, weight[:, :, i], None, stride[1:], 0, dilation[1:], groups, 2, op)
        out = term if out is None else out + term
    out = out.reshape(batch, depth, weight.shape[0], *out_size[1:])
    return out.permute(0, 2, 1, 3, 4)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """1-D cross-correlation: (N, C, L) or (C, L) with weight (O, C/groups, k) -> (N, O, L_out).

    ``L_out = (L + pad_lo + pad_hi - dilation * (k - 1) - 1) // stride + 1``; ``padding`` is an
    int or ``'valid'`` / ``'same'``. Gradients: those of the composite
    (``dW_j = g_j @ cols_j^T``, ``dcols_j = W_j^T @ g_j`` folded back, ``db = sum g``).
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """2-D cross-correlation: (N, C, H, W) or (C, H, W) with weight (O, C/groups, kh, kw).

    Output (N, O, H_out, W_out), each spatial size as in :func:`conv1d`. Gradients: those of
    the composite (``dW_j = g_j @ cols_j^T``, ``dcols_j = W_j^T @ g_j`` folded back,
    ``db = sum g``).
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """3-D cross-correlation: (N, C, D, H, W) or (C, D, H, W) with weight
    (O, C/groups, kd, kh, kw) -> (N, O, D_out, H_out, W_out), each size as in :func:`conv1d`.

    Gradients: those of the composite, a sum over the depth taps ``i`` of ``conv2d``s
    (``dW[:, :, i] = sum_t dW_2d(x[:, :, t s_d + i d_d], g[:, :, t])``, ``dx`` the sum of the
    taps' input gradients put back at their depths, ``db = sum g``).
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")
