"""``bilinear``: ``y[..., o] = x1[..., :] @ weight[o] @ x2[..., :] + bias[o]``.

One ``einsum`` and a bias add: no new ``Function``, the gradients are einsum's.
"""

from __future__ import annotations

from ...ops.linalg.matmul import einsum
from ...tensor_api.tensor import Tensor
from .._checks import require_tensor

__all__ = ["bilinear"]


def _check_bilinear_args(input1, input2, weight, bias) -> None:
    """Shapes as torch checks them: equal batch dims, feature sizes and bias matching weight."""
    for name, t in (("input1", input1), ("input2", input2), ("weight", weight)):
        require_tensor(t, "bilinear", name)
    if bias is not None:
        require_tensor(bias, "bilinear", "bias")
    if weight.ndim != 3:
        raise RuntimeError(
            f"bilinear(): weight must be 3-D (out_features, in1_features, in2_features), "
            f"got shape {list(weight.shape)}"
        )
    if input1.ndim != input2.ndim or input1.ndim == 0:
        raise RuntimeError(
            f"bilinear(): input1 and input2 must have the same number of (>= 1) dims, got "
            f"shapes {list(input1.shape)} and {list(input2.shape)}"
        )
    for d, (a, b) in enumerate(zip(input1.shape[:-1], input2.shape[:-1])):
        if a != b:
            raise RuntimeError(
                f"bilinear(): input batch dimensions do not match at dim {d}: got {a} and {b} "
                f"(input1 shape {list(input1.shape)}, input2 shape {list(input2.shape)})"
            )
    for i, (t, expected) in enumerate(((input1, weight.shape[1]), (input2, weight.shape[2])), 1):
        if t.shape[-1] != expected:
            raise RuntimeError(
                f"bilinear(): input{i} size does not match weight size: got {t.shape[-1]} but "
                f"expected {expected} (input{i} shape {list(t.shape)}, weight shape "
                f"{list(weight.shape)})"
            )
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise RuntimeError(
            f"bilinear(): bias size does not match weight size: got {list(bias.shape)} but "
            f"expected [{weight.shape[0]}]"
        )
    dtypes = {t.dtype for t in (input1, input2, weight, bias) if t is not None}
    if len(dtypes) != 1:
        raise RuntimeError(
            f"bilinear(): input1, input2, weight and bias must share one dtype, got "
            f"{sorted(str(d) for d in dtypes)}"
        )


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """Bilinear form ``y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o]``.

    Shapes: ``input1`` (*, in1), ``input2`` (*, in2) with the same leading dims (*),
    ``weight`` (out, in1, in2), ``bias`` (out,) -> ``y`` (*, out).

    Gradient, with ``g = dL/dy`` and the sums over the leading (*) dims::

        d input1[..., i] = sum_oj g[..., o] weight[o, i, j] input2[..., j]
        d input2[..., j] = sum_oi g[..., o] weight[o, i, j] input1[..., i]
        d weight[o, i, j] = sum g[..., o] input1[..., i] input2[..., j]
        d bias = sum g

    Composes: tinyattn.einsum
    """
    _check_bilinear_args(input1, input2, weight, bias)
    out = einsum("...i,oij,...j->...o", input1, weight, input2)
    return out + bias if bias is not None else out
