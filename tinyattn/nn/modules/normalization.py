"""``LayerNorm`` and ``RMSNorm`` over the trailing ``normalized_shape`` dims; ``GroupNorm`` and
``LocalResponseNorm`` over channels."""

from __future__ import annotations

import numbers

from ...foundations.type_names import type_name
from ...ops.creation.factories import empty
from ...tensor_api.tensor import Tensor
from .. import functional as F
from .. import init
from ..functional.norm_group import group_norm, local_response_norm
from ..parameter import Parameter
from ._args import size_arg
from .module import Module


def _as_shape(layer: str, normalized_shape) -> tuple[int, ...]:
    """An int or a sequence of ints, each >= 0 (a float or str is refused, not rounded)."""
    if isinstance(normalized_shape, numbers.Integral):
        return (size_arg(layer, "normalized_shape", normalized_shape),)
    if isinstance(normalized_shape, (str, bytes)) or not hasattr(normalized_shape, "__iter__"):
        raise TypeError(
            f"{layer}: normalized_shape must be an int or a sequence of ints, got "
            f"{type_name(normalized_shape)} ({normalized_shape!r})"
        )
    return tuple(size_arg(layer, "normalized_shape", s) for s in normalized_shape)


def _register_affine(module: Module, name: str, wanted: bool, dtype, device) -> None:
    """``name``: an (uninitialised) ``normalized_shape`` Parameter when wanted, else None."""
    if wanted:
        shape = module.normalized_shape
        setattr(module, name, Parameter(empty(shape, dtype=dtype, device=device)))
    else:
        module.register_parameter(name, None)


class LayerNorm(Module):
    """y = (x - mean) / sqrt(var + eps) * weight + bias over the last ``len(normalized_shape)`` dims.

    weight (normalized_shape) = 1 and bias (normalized_shape) = 0 when ``elementwise_affine``.
    """

    def __init__(
        self,
        normalized_shape,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.normalized_shape = _as_shape("LayerNorm", normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _register_affine(self, "weight", elementwise_affine, dtype, device)
        _register_affine(self, "bias", elementwise_affine and bias, dtype, device)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        """Layer norm over the trailing ``normalized_shape`` dims; input (*, *normalized_shape).

        ``xhat = (x - mean) rstd``, ``y = xhat * weight + bias``; with ``g' = g * weight``:
        ``dx = rstd (g' - mean(g') - xhat mean(g' xhat))``, ``d weight = sum g xhat``,
        ``d bias = sum g``. See :func:`F.layer_norm`.
        """
        _check_trailing(self, input)
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
            f"bias={self.bias is not None}"
        )


class RMSNorm(Module):
    """y = x / sqrt(mean(x^2) + eps) * weight; ``eps=None`` uses ``finfo(input.dtype).eps``."""

    def __init__(
        self,
        normalized_shape,
        eps: float | None = None,
        elementwise_affine: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.normalized_shape = _as_shape("RMSNorm", normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _register_affine(self, "weight", elementwise_affine, dtype, device)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x: Tensor) -> Tensor:
        """RMS norm over the trailing ``normalized_shape`` dims; input (*, *normalized_shape).

        ``xhat = x rstd``, ``rstd = 1 / sqrt(mean(x^2) + eps)``, ``y = xhat * weight``; with
        ``g' = g * weight``: ``dx = rstd (g' - xhat mean(g' xhat))``, ``d weight = sum g xhat``.
        """
        _check_trailing(self, x)
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


def _check_trailing(module: Module, input: Tensor) -> None:
    shape = module.normalized_shape
    k = len(shape)
    if not isinstance(input, Tensor):
        raise TypeError(f"{type(module).__name__}: input must be a Tensor, got {type_name(input)}")
    x = input._data  # (the array's shape: no Size object per call)
    if x.ndim < k or x.shape[x.ndim - k :] != shape:
        raise RuntimeError(
            f"{type(module).__name__}: input shape {list(input.shape)} does not end with "
            f"normalized_shape={list(shape)}"
        )


class GroupNorm(Module):
    """Group normalisation of (N, C, *) input: ``num_groups`` groups of C / G channels, each
    normalised per sample; weight (C,) = 1 and bias (C,) = 0 when ``affine``."""

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        self.num_groups = size_arg("GroupNorm", "num_groups", num_groups, minimum=1)
        self.num_channels = size_arg("GroupNorm", "num_channels", num_channels)
        if self.num_channels % self.num_groups:
            raise ValueError(
                f"GroupNorm: num_channels must be divisible by num_groups, got "
                f"num_channels={num_channels} and num_groups={num_groups}"
            )
        self.eps, self.affine = eps, affine
        self.normalized_shape = (self.num_channels,)  # (the shape _register_affine allocates)
        _register_affine(self, "weight", affine, dtype, device)
        _register_affine(self, "bias", affine and bias, dtype, device)
        del self.normalized_shape
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        """(N, C, *) -> (N, C, *). ``y = (x - mean_g) / sqrt(var_g + eps) * weight + bias``;
        ``dx = (g' - mean(g') - xhat mean(g' xhat)) / sqrt(var_g + eps)``, ``g' = g * weight``."""
        return group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self.bias is not None}"
        )


class LocalResponseNorm(Module):
    """``y = x / (k + alpha / size * sum of x^2 over `size` neighbouring channels)^beta``."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        """(N, C, *) -> (N, C, *), ``y = x / s^beta`` with ``s = k + alpha * mean_window(x^2)``:
        ``dx = g / s^beta - (2 alpha beta / size) x * sum_window(g y / s)``."""
        return local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
