"""``Bilinear``: ``y = x1^T A x2 + b`` with torch's parameter names and init."""

from __future__ import annotations

import math

from ...ops.creation.factories import empty
from ...tensor_api.tensor import Tensor
from .. import init
from ..functional.bilinear import bilinear
from ..parameter import Parameter
from ._args import size_arg
from .module import Module

__all__ = ["Bilinear"]


class Bilinear(Module):
    """``y[..., o] = input1 @ weight[o] @ input2 + bias[o]``: (*, in1), (*, in2) -> (*, out).

    weight: (out_features, in1_features, in2_features) and bias: (out_features,), both
    ~ U(-1/sqrt(in1_features), 1/sqrt(in1_features)) as in torch.
    """

    def __init__(
        self,
        in1_features: int,
        in2_features: int,
        out_features: int,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.in1_features = size_arg("Bilinear", "in1_features", in1_features)
        self.in2_features = size_arg("Bilinear", "in2_features", in2_features)
        self.out_features = size_arg("Bilinear", "out_features", out_features)
        shape = (self.out_features, self.in1_features, self.in2_features)
        self.weight = Parameter(empty(shape, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(empty((self.out_features,), dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.shape[1]) if self.weight.shape[1] else 0.0
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        """``y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o]``.

        Gradient (sums over the leading dims)::

            d input1 = sum_oj g_o weight[o, :, j] input2_j,   d bias = sum g
            d weight[o, i, j] = sum g_o input1_i input2_j

        Composes: F.bilinear
        """
        return bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )
