"""``LinearCrossEntropyLoss``: a ``Linear`` head and its cross entropy in one module (torch 2.13)."""

from __future__ import annotations

import math

from ...tensor_api.tensor import Tensor
from ..functional.loss_linear_cross_entropy import LinearCrossEntropyOptions, linear_cross_entropy
from .linear import Linear
from .loss import _WeightedLoss

__all__ = ["LinearCrossEntropyLoss", "LinearCrossEntropyOptions"]


class LinearCrossEntropyLoss(_WeightedLoss):
    """Cross entropy of ``self.linear(input)`` against ``target`` (see
    :func:`~tinyattn.nn.functional.linear_cross_entropy`).

    The head's weight is stored flat, ``(num_classes * prod(out_features), in_features)``
    (torch's layout), and viewed as ``(num_classes, *out_features, in_features)`` in forward.
    """

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        out_features: tuple[int, ...] = (),
        bias: bool = False,
        device=None,
        dtype=None,
        reduction: str = "mean",
        weight: Tensor | None = None,
        ignore_index: int | None = None,
        label_smoothing: float = 0.0,
        options: LinearCrossEntropyOptions | None = None,
    ) -> None:
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(
                f"expected weight shape to be {(num_classes,)}, got {tuple(weight.shape)}"
            )
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(
                f"expected label_smoothing to be in range [0, 1], got {label_smoothing}"
            )
        super().__init__(weight, None, None, reduction)
        self.num_classes = num_classes
        self.out_features = out_features
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        rows = math.prod(out_features) * num_classes
        self.linear = Linear(in_features, rows, bias=bias, device=device, dtype=dtype)
        self.options = options

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Loss of ``input`` (N, in) or (in,) against class indices or probabilities.

        With ``z = input W^T + b`` and ``dz = g * w[t] * (softmax(z) - onehot(t))``:
        ``dinput = dz W``, ``dW = dz^T input``, ``db = sum dz``.
        """
        shape = (self.num_classes, *self.out_features)
        bias = self.linear.bias.reshape(shape) if self.linear.bias is not None else None
        return linear_cross_entropy(
            input,
            self.linear.weight.reshape(*shape, self.linear.in_features),
            target,
            linear_bias=bias,
            weight=self.weight,
            reduction=self.reduction,
            ignore_index=self.ignore_index,
            label_smoothing=self.label_smoothing,
            options=self.options,
        )

    def extra_repr(self) -> str:
        return (
            f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
            f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
            f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
            f"label_smoothing={self.label_smoothing}, options={self.options}"
        )
