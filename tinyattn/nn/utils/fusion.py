"""Fold an eval-mode BatchNorm into the convolution or linear layer before it (torch's ``fusion``).

In eval mode BatchNorm is the affine map ``bn(z) = (z - mean) * s + beta`` with
``s = gamma / sqrt(var + eps)`` per channel, so ``bn(conv(x))`` equals a convolution
with weight ``W * s`` (scaled per output channel) and bias ``(b - mean) * s + beta``.
"""

from __future__ import annotations

import copy

from ...ops.creation.factories import ones_like, zeros_like
from ...ops.elementwise.unary import rsqrt
from ...tensor_api.tensor import Tensor
from ..parameter import Parameter

__all__ = [
    "fuse_conv_bn_eval",
    "fuse_conv_bn_weights",
    "fuse_linear_bn_eval",
    "fuse_linear_bn_weights",
]


def _check_eval_bn(layer, bn) -> None:
    if layer.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")


def fuse_conv_bn_eval(conv, bn, transpose: bool = False):
    """A new convolution equal to ``bn(conv(x))`` for eval-mode ``conv`` and ``bn`` (inputs untouched).

    ``transpose=True`` for a transposed convolution, whose output channels are weight dim 1.
    """
    _check_eval_bn(conv, bn)
    fused_conv = copy.deepcopy(conv)
    fused_conv.weight, fused_conv.bias = fuse_conv_bn_weights(
        fused_conv.weight,
        fused_conv.bias,
        bn.running_mean,
        bn.running_var,
        bn.eps,
        bn.weight,
        bn.bias,
        transpose,
    )
    return fused_conv


def fuse_conv_bn_weights(
    conv_w: Tensor,
    conv_b: Tensor | None,
    bn_rm: Tensor,
    bn_rv: Tensor,
    bn_eps: float,
    bn_w: Tensor | None,
    bn_b: Tensor | None,
    transpose: bool = False,
) -> tuple[Parameter, Parameter]:
    """Fused convolution parameters: ``W' = W * s`` (per output channel), ``b' = (b - mean) * s + beta``.

    ``s = gamma * rsqrt(var + eps)``, shape ``(C_out,)``; broadcast over weight dim 0
    (dim 1 when ``transpose``). A missing ``conv_b`` / ``bn_b`` counts as 0, a missing
    ``bn_w`` as 1. The results keep the dtypes of ``conv_w`` and ``conv_b``.
    """
    weight_dtype = conv_w.dtype
    bias_dtype = conv_b.dtype if conv_b is not None else weight_dtype
    conv_b = zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w = ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = zeros_like(bn_rm) if bn_b is None else bn_b
    var_rsqrt = rsqrt(bn_rv + bn_eps)
    channel = [1, -1] if transpose else [-1, 1]
    shape = channel + [1] * (conv_w.ndim - 2)
    fused_w = (conv_w * (bn_w * var_rsqrt).reshape(shape)).to(dtype=weight_dtype)
    fused_b = ((conv_b - bn_rm) * var_rsqrt * bn_w + bn_b).to(dtype=bias_dtype)
    return Parameter(fused_w, conv_w.requires_grad), Parameter(fused_b, conv_b.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A new ``Linear`` equal to ``bn(linear(x))`` for eval-mode ``linear`` and ``bn`` (inputs untouched).

    ``bn.num_features`` must equal ``linear.out_features`` or be 1.
    """
    _check_eval_bn(linear, bn)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(
            "To fuse, linear.out_features == bn.num_features or bn.num_features == 1, "
            f"got linear.out_features={linear.out_features} and bn.num_features={bn.num_features}"
        )
    fused_linear = copy.deepcopy(linear)
    fused_linear.weight, fused_linear.bias = fuse_linear_bn_weights(
        fused_linear.weight,
        fused_linear.bias,
        bn.running_mean,
        bn.running_var,
        bn.eps,
        bn.weight,
        bn.bias,
    )
    return fused_linear


def fuse_linear_bn_weights(
    linear_w: Tensor,
    linear_b: Tensor | None,
    bn_rm: Tensor,
    bn_rv: Tensor,
    bn_eps: float,
    bn_w: Tensor,
    bn_b: Tensor,
) -> tuple[Parameter, Parameter]:
    """Fused linear parameters: ``W' = W * s[:, None]``, ``b' = (b - mean) * s + beta``, ``s = gamma * rsqrt(var + eps)``.

    ``linear_w`` is ``(out, in)``; a missing ``linear_b`` counts as 0. The results keep
    the dtypes of ``linear_w`` and ``linear_b``.
    """
    weight_dtype = linear_w.dtype
    bias_dtype = linear_b.dtype if linear_b is not None else weight_dtype
    linear_b = zeros_like(bn_rm) if linear_b is None else linear_b
    bn_scale = bn_w * rsqrt(bn_rv + bn_eps)
    fused_w = linear_w * bn_scale.unsqueeze(-1).to(dtype=weight_dtype)
    fused_b = ((linear_b - bn_rm) * bn_scale + bn_b).to(dtype=bias_dtype)
    return Parameter(fused_w, linear_w.requires_grad), Parameter(fused_b, linear_b.requires_grad)
