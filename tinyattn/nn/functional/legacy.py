"""torch's old and kernel-level ``nn.functional`` forms: ``conv_tbc`` (time-major 1-D
convolution), ``native_channel_shuffle`` and the legacy cross-map LRN behind
``nn.CrossMapLRN2d``.

All are compositions of differentiable tinyattn ops, so each gradient is the composite's.
"""

from __future__ import annotations

import numpy as np

from ...foundations.type_names import type_name
from ...ops.creation.factories import zeros
from ...ops.shape.rearrange import cat
from ...tensor_api.tensor import Tensor
from .._checks import require_tensor
from .conv import conv1d
from .pixel import channel_shuffle

__all__ = ["conv_tbc", "native_channel_shuffle"]


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """1-D convolution over time in (time, batch, channels) layout.

    ``input`` (T, B, C_in), ``weight`` (K, C_in, C_out), ``bias`` (C_out,) ->
    (T + 2 pad - K + 1, B, C_out)::

        out[t, b] = bias + sum_k input[t + k - pad, b] @ weight[k]

    (zeros outside the input; a negative ``pad`` crops ``-pad`` steps from each end, as
    torch's kernel does). Computed as :func:`conv1d` on the (B, C_in, T) view with weight
    (C_out, C_in, K), so the gradients are conv1d's:
    ``d input[t] = sum_k g[t - k + pad] @ weight[k]^T``,
    ``d weight[k] = sum_t input[t + k - pad]^T @ g[t]``, ``d bias = sum g``.
    """
    require_tensor(input, "conv_tbc")
    require_tensor(weight, "conv_tbc", "weight")
    if not isinstance(bias, Tensor):
        raise TypeError(
            f"conv_tbc(): argument 'bias' (position 3) must be Tensor, not {type_name(bias)}"
        )
    if input.ndim != 3:
        raise RuntimeError(
            f"conv_tbc: Input must have 3 dims: time, batch, in_channel; got shape "
            f"{list(input.shape)}"
        )
    if weight.ndim != 3:
        raise RuntimeError(
            "conv_tbc: Weight tensor must have 3 dims: kernel_width, in_channels, "
            f"out_channels; got shape {list(weight.shape)}"
        )
    if bias.ndim != 1:
        raise RuntimeError(f"conv_tbc: Bias must be 1-D, got shape {list(bias.shape)}")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError(
            f"conv_tbc: Input dim 2 (input channels, {input.shape[2]}) is not == dim 1 in the "
            f"weight tensor ({weight.shape[1]})"
        )
    if bias.shape[0] != weight.shape[2]:
        raise RuntimeError(
            f"conv_tbc: Bias size ({bias.shape[0]}) must equal dim 2 in the weight tensor "
            f"(output channels, {weight.shape[2]})."
        )
    pad = int(pad)
    steps = input.shape[0] + 2 * pad - weight.shape[0] + 1
    if steps < 0:
        raise RuntimeError(
            f"conv_tbc: the output would have {steps} time steps: input length "
            f"{input.shape[0]}, pad {pad}, kernel width {weight.shape[0]}"
        )
    if steps == 0:  # (conv1d refuses an empty output; torch returns one)
        return bias.expand(0, input.shape[1], bias.shape[0])
    x = input if pad >= 0 else input[-pad : input.shape[0] + pad]
    y = conv1d(x.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=max(pad, 0))
    return y.permute(2, 0, 1)


def native_channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """torch's kernel-level :func:`channel_shuffle` (same result): (N, C, *) -> (N, C, *).

    Gradient: ``dx = channel_shuffle(g, C / groups)`` (torch leaves this one without a
    derivative; tinyattn's is channel_shuffle's).
    """
    return channel_shuffle(input, groups)


def cross_map_lrn2d(input: Tensor, size: int, alpha: float, beta: float, k: float) -> Tensor:
    """The legacy Lua-torch LRN of ``nn.CrossMapLRN2d``: ``y = x * (k + alpha/size * s)^-beta``.

    ``input`` (N, C, H, W). ``s[c]`` sums ``x^2`` over channels ``c - pad + 1 .. c + pad - 1``
    (``pad = (size - 1) // 2 + 1``, clipped to the channels) and, a quirk of torch's running
    sum that we keep for parity, always includes channel 0. Gradient: the composite's,
    ``dx = g * y / x - 2 alpha beta / size * x * sum over c' whose window holds c of
    g[c'] y[c'] / scale[c']`` (torch's own hand-written backward disagrees with finite
    differences of its forward; ours is the exact derivative).
    """
    require_tensor(input, "CrossMapLRN2d")
    if input.ndim != 4:
        raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.ndim}D instead.")
    channels = input.shape[1]
    pad = int((size - 1) / 2 + 1)
    c = np.arange(channels)
    upper = np.minimum(c + pad - 1, channels - 1) + 1
    lower = np.maximum(c - pad + 1, 1)
    square = input * input
    zero = zeros(input.shape[0], 1, *input.shape[2:], dtype=input.dtype)
    prefix = cat([zero, square.cumsum(1)], 1)  # prefix[j] = sum of square[:j]
    total = (
        square[:, :1]
        + prefix.index_select(1, Tensor._make(upper))
        - prefix.index_select(1, Tensor._make(lower))
    )
    return input * (total * (alpha / size) + k).pow(-beta)
