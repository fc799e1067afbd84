"""``batch_norm``: normalise each channel (dim 1) over the batch and every other dim.

Training: ``y = (x - mean) / sqrt(var + eps) * weight + bias`` with the batch's mean and
biased variance, and (when given) the running stats updated in place:
``running = (1 - momentum) * running + momentum * batch_stat`` (the running variance
takes the unbiased batch variance, as torch). Eval: the running stats stand in for the
batch's. A composite of ``mean``/``var``/arithmetic, so the gradient is theirs (the usual
batch-norm backward: ``dx = (g - mean(g) - xhat * mean(g * xhat)) * weight / sqrt(var + eps)``).

NaN/inf: as torch, except for an infinite ``weight`` element, where this composite gives
``±inf`` outputs (``xhat * inf``) and NaN input gradients, and torch's fused kernel
(``x * (w * invstd) + (b - mean * w * invstd)``) gives NaN outputs and ``±inf`` gradients.
"""

from __future__ import annotations

import numbers

import numpy as np

from ...foundations.type_names import type_name
from ...ops._accumulation import accumulates_in_float32
from ...tensor_api.tensor import Tensor

__all__ = ["batch_norm"]


def _check_1d(t, name: str, channels: int) -> None:
    if t is None:
        return
    if not isinstance(t, Tensor):
        raise TypeError(f"batch_norm: argument '{name}' must be a Tensor, got {type_name(t)}")
    if tuple(t.shape) != (channels,):
        raise RuntimeError(
            f"batch_norm: expected {name} of shape [{channels}] (one per channel), got "
            f"{list(t.shape)}"
        )


@accumulates_in_float32("input", "weight", "bias")
def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Batch normalisation of ``input`` (N, C, *) per channel C; see the module docstring."""
    if not isinstance(input, Tensor):
        raise TypeError(f"batch_norm: argument 'input' must be a Tensor, got {type_name(input)}")
    if input.ndim < 2:
        raise ValueError(
            f"batch_norm: expected an input of at least 2 dims (N, C, *), got shape "
            f"{list(input.shape)}"
        )
    if not input.is_floating_point():
        raise RuntimeError(f"batch_norm: expected a floating point input, got {input.dtype}")
    if not isinstance(momentum, numbers.Real) or not isinstance(eps, numbers.Real):
        raise TypeError("batch_norm: arguments 'momentum' and 'eps' must be numbers")
    channels = input.shape[1]
    for name, t in (
        ("running_mean", running_mean),
        ("running_var", running_var),
        ("weight", weight),
        ("bias", bias),
    ):
        _check_1d(t, name, channels)
    dims = tuple(d for d in range(input.ndim) if d != 1)
    shape = (1, channels) + (1,) * (input.ndim - 2)
    if training:
        count = input.numel() // max(channels, 1)
        if count == 1:
            raise ValueError(
                f"Expected more than 1 value per channel when training, got input size "
                f"{list(input.shape)}"
            )
        if count == 0:  # an empty batch: an empty output, running stats untouched (as torch)
            mean = Tensor._make(np.zeros(shape, input._data.dtype))
            var = Tensor._make(np.ones(shape, input._data.dtype))
        else:
            mean = input.mean(dims, keepdim=True)
            var = input.var(dims, keepdim=True, unbiased=False)
        if count and (running_mean is not None or running_var is not None):
            m = float(momentum)
            batch_mean = mean._data.reshape(channels)
            batch_var = var._data.reshape(channels) * (count / (count - 1))
            for running, value in ((running_mean, batch_mean), (running_var, batch_var)):
                if running is not None:
                    new = (1 - m) * running._data + m * value
                    running._data[...] = new.astype(running._data.dtype, copy=False)
                    running._bump_version()
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError(
                "batch_norm: running_mean and running_var must be given when training=False"
            )
        mean = running_mean.reshape(shape)
        var = running_var.reshape(shape)
        if mean.dtype != input.dtype:
            mean, var = mean.to(input.dtype), var.to(input.dtype)
    out = (input - mean) / (var + eps).sqrt()
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out
