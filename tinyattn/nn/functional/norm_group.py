"""Group, instance and local-response normalisation: composites of mean/var/pooling.

- ``group_norm``: channels split into ``G`` groups; each sample's group is normalised
  over its channels and spatial positions: ``y = (x - mean) / sqrt(var + eps) * w + b``.
- ``instance_norm``: group norm with one channel per group (each (n, c) map on its own),
  optionally updating per-channel running stats (the batch's stats averaged over N).
- ``local_response_norm``: ``y = x / (k + alpha * mean over the `size` neighbouring
  channels of x^2)^beta`` (torch's formula: a zero-padded average over channels).

Each is built of differentiable ops (mean, var, pow, avg_pool2d), so the gradients are
theirs; e.g. the normalisation's ``dx = (g' - mean(g') - xhat * mean(g' * xhat)) / sqrt(var
+ eps)`` with ``g' = g * w`` and the means over each group.
"""

from __future__ import annotations

import math
import numbers

from ...foundations.type_names import type_name
from ...ops._accumulation import accumulates_in_float32
from ...tensor_api.tensor import Tensor
from .pool import avg_pool2d
from .sampling_spatial import pad

__all__ = ["group_norm", "instance_norm", "local_response_norm"]


def _check_input(input, least: int, op: str) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}: argument 'input' must be a Tensor, got {type_name(input)}")
    if input.ndim < least:
        raise ValueError(
            f"{op}: expected an input of at least {least} dims (N, C, *), got shape "
            f"{list(input.shape)}"
        )
    if not input.is_floating_point():
        raise RuntimeError(f"{op}: expected a floating point input, got {input.dtype}")


def _check_per_channel(t, name: str, channels: int, op: str) -> None:
    if t is None:
        return
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: argument '{name}' must be a Tensor, got {type_name(t)}")
    if tuple(t.shape) != (channels,):
        raise RuntimeError(
            f"{op}: expected {name} of shape [{channels}] (one per channel), got {list(t.shape)}"
        )


def _affine(out: Tensor, weight, bias) -> Tensor:
    shape = (1, out.shape[1]) + (1,) * (out.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


@accumulates_in_float32("input", "weight", "bias")
def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise (N, C, *) input over each of ``num_groups`` channel groups (C / G channels
    and all positions), then scale and shift per channel.

    ``y[n, c] = (x[n, c] - mean[n, g]) / sqrt(var[n, g] + eps) * weight[c] + bias[c]``
    (biased variance). Gradient: ``dx = (g' - mean(g') - xhat * mean(g' * xhat)) /
    sqrt(var + eps)`` per group with ``g' = g * weight``; ``dweight = sum(g * xhat)``,
    ``dbias = sum(g)`` over N and positions.
    """
    _check_input(input, 2, "group_norm")
    channels = input.shape[1]
    if not isinstance(num_groups, numbers.Integral) or num_groups < 1 or channels % num_groups:
        raise RuntimeError(
            f"group_norm: expected num_groups to be a positive int dividing the number of "
            f"channels, got num_groups={num_groups!r} and input of shape {list(input.shape)} "
            f"({channels} channels)"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        _check_per_channel(t, name, channels, "group_norm")
    batch = input.shape[0]
    grouped = input.reshape(batch, num_groups, input.numel() // max(batch * num_groups, 1))
    mean = grouped.mean(-1, keepdim=True)
    var = grouped.var(-1, keepdim=True, unbiased=False)
    out = ((grouped - mean) / (var + eps).sqrt()).reshape(input.shape)
    return _affine(out, weight, bias)


@accumulates_in_float32("input", "weight", "bias")
def instance_norm(
    input: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each (n, c) map of (N, C, *) input over its positions, then per-channel affine.

    ``use_input_stats``: the map's own mean and biased variance; the running stats (when
    given) move to ``(1 - momentum) * running + momentum * stat`` with ``stat`` the batch's
    per-map statistic (unbiased variance) averaged over N, as torch. Otherwise the running
    stats normalise. Gradient: that of :func:`group_norm` with one channel per group.
    """
    _check_input(input, 3, "instance_norm")
    channels = input.shape[1]
    for name, t in (
        ("running_mean", running_mean),
        ("running_var", running_var),
        ("weight", weight),
        ("bias", bias),
    ):
        _check_per_channel(t, name, channels, "instance_norm")
    dims = tuple(range(2, input.ndim))
    shape = (1, channels) + (1,) * len(dims)
    if use_input_stats:
        mean = input.mean(dims, keepdim=True)
        var = input.var(dims, keepdim=True, unbiased=False)
        count = math.prod(input.shape[2:])
        if count == 1:  # torch checks this whenever the input's statistics are used
            raise ValueError(
                f"instance_norm: expected more than 1 spatial element when training, got "
                f"input size {list(input.shape)}"
            )
        m = float(momentum)
        unbiased = var._data * (count / max(count - 1, 1))
        for running, value in ((running_mean, mean._data), (running_var, unbiased)):
            if running is not None:
                batch_stat = value.reshape(input.shape[0], channels).mean(0)
                new = (1 - m) * running._data + m * batch_stat
                running._data[...] = new.astype(running._data.dtype, copy=False)
                running._bump_version()
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError(
                "instance_norm: running_mean and running_var must be given when "
                "use_input_stats=False"
            )
        mean = running_mean.reshape(shape).to(input.dtype)
        var = running_var.reshape(shape).to(input.dtype)
    out = (input - mean) / (var + eps).sqrt()
    return _affine(out, weight, bias)


def local_response_norm(
    input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0
) -> Tensor:
    """``y[n, c] = x[n, c] / (k + alpha / size * sum_{c'} x[n, c']^2)^beta`` over the ``size``
    channels ``c' in [c - size // 2, c + (size - 1) // 2]`` (zeros beyond the edges).

    Input (N, C, *) with at least one position dim. Gradient: that of the composite
    (``x^2``, an average over channels, ``pow``, a division).
    """
    _check_input(input, 3, "local_response_norm")
    if not isinstance(size, numbers.Integral) or size < 1:
        raise ValueError(f"local_response_norm: size must be a positive int, got {size!r}")
    if input.numel() == 0:  # nothing to normalise (torch too); avg_pool2d refuses empty input
        return input.clone()
    batch, channels = input.shape[:2]
    div = (input * input).reshape(batch, 1, channels, -1)
    div = pad(div, (0, 0, size // 2, (size - 1) // 2))
    div = avg_pool2d(div, (size, 1), stride=1).reshape(input.shape)
    return input / (div * alpha + k).pow(beta)
