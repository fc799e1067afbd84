"""``conv_transpose1d`` / ``2d`` / ``3d``: the adjoint of a convolution, built on ``fold``.

A convolution gathers each output from a window of inputs (im2col, then a matmul); its
transpose scatters each input through the kernel into a window of outputs:

    cols[n, j] = W_j^T @ x[n, j]               W_j: (C/g, O/g * kh * kw), x[n, j]: (C/g, H * W)
    full = fold(cols, kernel, dilation, stride)     (N, O, (H-1) s + d (k-1) + 1, ...)
    out  = full[p : p + H_out] (+ zero rows past the end for output_padding), + bias

with ``H_out = (H - 1) s - 2 p + d (k - 1) + output_padding + 1``. No new ``Function``:
the gradients are those of ``matmul``, ``fold`` (whose adjoint is ``unfold``) and ``pad``
(a crop): ``dx_j = W_j @ unfold(g')_j``, ``dW_j = x_j @ unfold(g')_j^T`` summed over N.

``conv_transpose3d`` sums, over the kernel's depth taps ``i``, the ``conv_transpose2d`` of
every input depth slice ``t`` with ``W[:, :, i]``, placed at output depth ``t s_d + i d_d``
(zeros inserted between slices, then shifted by padding), then crops the depth padding.
"""

from __future__ import annotations

from ...foundations.type_names import type_name
from ...tensor_api.tensor import Tensor
from .conv import _ints
from .sampling_spatial import fold, pad

__all__ = ["conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]


def _check(input, weight, bias, groups, n: int, op: str) -> None:
    for name, t in (("input", input), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: argument '{name}' must be a Tensor, got {type_name(t)}")
    if weight.ndim != n + 2:
        raise RuntimeError(
            f"{op}: expected a {n + 2}D weight (in_channels, out_channels/groups, *kernel), got "
            f"shape {list(weight.shape)}"
        )
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(
            f"{op}: expected a {n + 1}D (unbatched) or {n + 2}D (batched) input, got shape "
            f"{list(input.shape)}"
        )
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
        raise RuntimeError(f"{op}: non-positive groups is not supported, got groups={groups!r}")
    if input.dtype != weight.dtype or (bias is not None and bias.dtype != weight.dtype):
        raise RuntimeError(f"{op}: input, weight and bias must have the same dtype")
    if not input.is_floating_point():
        raise RuntimeError(f"{op}: expected floating point input and weight, got {input.dtype}")
    channels = input.shape[-n - 1]
    if channels != weight.shape[0] or channels % groups:
        raise RuntimeError(
            f"{op}: given groups={groups}, weight of size {list(weight.shape)}, expected input "
            f"{list(input.shape)} to have {weight.shape[0]} channels (divisible by groups), "
            f"but got {channels} channels instead"
        )
    out_ch = weight.shape[1] * groups
    if bias is not None and tuple(bias.shape) != (out_ch,):
        raise RuntimeError(f"{op}: expected bias of shape [{out_ch}], got {list(bias.shape)}")


def _conv_transpose(
    input, weight, bias, stride, padding, output_padding, groups, dilation, n: int, op: str
) -> Tensor:
    _check(input, weight, bias, groups, n, op)
    stride, padding = _ints(stride, n, "stride", op), _ints(padding, n, "padding", op)
    dilation = _ints(dilation, n, "dilation", op)
    output_padding = _ints(output_padding, n, "output_padding", op)
    if min(stride) < 1 or min(dilation) < 1 or min(padding) < 0 or min(output_padding) < 0:
        raise RuntimeError(
            f"{op}: expected stride, dilation >= 1 and padding, output_padding >= 0, got "
            f"stride={stride}, dilation={dilation}, padding={padding}, "
            f"output_padding={output_padding}"
        )
    if any(op_ >= max(s, d) for op_, s, d in zip(output_padding, stride, dilation)):
        raise RuntimeError(
            f"{op}: output_padding must be smaller than either stride or dilation, got "
            f"output_padding={output_padding}, stride={stride}, dilation={dilation}"
        )
    x = input if input.ndim == n + 2 else input.unsqueeze(0)
    if n == 3:
        out = _by_depth(x, weight, stride, padding, output_padding, groups, dilation, op)
        out = out + bias.reshape(1, -1, 1, 1, 1) if bias is not None else out
        return out if input.ndim == 5 else out.squeeze(0)
    kernel = tuple(weight.shape[2:])
    if n == 1:  # a 1-D transpose is a 2-D one over a height-1 image
        x, weight = x.unsqueeze(2), weight.unsqueeze(2)
        kernel, stride, dilation = (1, *kernel), (1, *stride), (1, *dilation)
        padding, output_padding = (0, *padding), (0, *output_padding)
    batch, in_ch, height, width = x.shape
    out_per_group = weight.shape[1]
    full = tuple(
        (s - 1) * st + d * (k - 1) + 1
        for s, st, d, k in zip((height, width), stride, dilation, kernel)
    )
    out_hw = tuple(f - 2 * p + o for f, p, o in zip(full, padding, output_padding))
    if min(out_hw) < 1:
        raise RuntimeError(
            f"{op}: the output size {out_hw[2 - n :]} is not positive (input {list(input.shape)}, "
            f"padding={padding[2 - n :]})"
        )
    xg = x.reshape(batch, groups, in_ch // groups, height * width)
    w = weight.reshape(groups, in_ch // groups, -1).transpose(1, 2)  # (g, O/g * kh * kw, C/g)
    cols = (w @ xg).reshape(batch, groups * w.shape[1], height * width)
    out = fold(cols, full, kernel, dilation=dilation, stride=stride)  # (N, O, *full)
    crop = []
    for p, o in zip(reversed(padding), reversed(output_padding)):
        crop += [-p, o - p]  # crop p at the start; at the end crop p, then add o zero rows
    if any(crop):
        out = pad(out, crop)
    if bias is not None:
        out = out + bias.reshape(1, out_per_group * groups, 1, 1)
    if n == 1:
        out = out.squeeze(2)
    return out if input.ndim == n + 2 else out.squeeze(0)


def _by_depth(x, weight, stride, padding, output_padding, groups, dilation, op: str) -> Tensor:
    """(N, C, D, H, W) -> (N, O, D_out, H_out, W_out): per depth tap ``i``, the
    ``conv_transpose2d`` of all depth slices (folded into the batch) put at depths
    ``t * s_d + i * d_d`` of the full output; then the depth padding is cropped."""
    batch, channels, depth, height, width = x.shape
    kernel = tuple(weight.shape[2:])
    full = [(s - 1) * st + d * (k - 1) + 1
            for s, st, d, k in zip(x.shape[2:], stride, dilation, kernel)]  # fmt: skip
    out_size = tuple(f - 2 * p + o for f, p, o in zip(full, padding, output_padding))
    if min(out_size) < 1:
        raise RuntimeError(
            f"{op}: the output size {out_size} is not positive (input {list(x.shape)}, "
            f"padding={padding})"
        )
    slices = x.permute(0, 2, 1, 3, 4).reshape(batch * depth, channels, height, width)
    out = None
    for i in range(kernel[0]):
        y = conv_transpose2d(slices, weight[:, :, i], None, stride[1:], padding[1:],
                             output_padding[1:], groups, dilation[1:])  # fmt: skip
        y = y.reshape(batch, depth, *y.shape[1:]).permute(0, 2, 3, 4, 1)  # (N, O, H', W', D)
        spread = pad(y.unsqueeze(-1), [0, stride[0] - 1]).flatten(-2)  # slice t at t * s_d
        start = i * dilation[0]
        term = pad(spread, [start, full[0] - start - depth * stride[0]])  # (.., full depth)
        out = term if out is None else out + term
    out = pad(out, [-padding[0], output_padding[0] - padding[0]])
    return out.permute(0, 1, 4, 2, 3)


def conv_transpose2d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
) -> Tensor:
    """Transposed 2-D convolution: (N, C, H, W) or (C, H, W) with weight (C, O/groups, kh, kw)
    -> (N, O, H_out, W_out), ``H_out = (H - 1) s - 2 p + d (kh - 1) + output_padding + 1``.

    The adjoint of ``conv2d`` with the same arguments (its input gradient). Gradients: those
    of the composite (``dx_j = W_j @ unfold(g)_j``, ``dW_j = sum_n x_j unfold(g)_j^T``,
    ``db = sum g``).
    """
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 2, "conv_transpose2d")  # fmt: skip


def conv_transpose1d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
) -> Tensor:
    """Transposed 1-D convolution: (N, C, L) or (C, L) with weight (C, O/groups, k) ->
    (N, O, L_out), ``L_out = (L - 1) s - 2 p + d (k - 1) + output_padding + 1``.

    Gradients: those of the composite (``dx_j = W_j @ unfold(g)_j``, ``dW_j = sum_n x_j
    unfold(g)_j^T``, ``db = sum g``).
    """
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 1, "conv_transpose1d")  # fmt: skip


def conv_transpose3d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
) -> Tensor:
    """Transposed 3-D convolution: (N, C, D, H, W) or (C, D, H, W) with weight
    (C, O/groups, kd, kh, kw) -> (N, O, D_out, H_out, W_out), each size
    ``(S - 1) s - 2 p + d (k - 1) + output_padding + 1``.

    Gradients: those of the composite, per depth tap a ``conv_transpose2d`` (``dx`` sums
    ``W_j @ unfold(g)_j`` of the taps at their depths, ``dW[:, :, i]`` that tap's
    ``sum_n x_j unfold(g)_j^T``, ``db = sum g``).
    """
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 3, "conv_transpose3d")  # fmt: skip
