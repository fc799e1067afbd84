"""The 3-D forms still missing from ``_pooling``: power-average pooling and unpooling.

- ``lp_pool3d`` is torch's formula ``(k * avg_pool3d(x^p))^(1/p)`` with ``k`` the window
  volume (``p = +inf`` is max pooling of ``|x|``, ``p = -inf`` the min of ``|x|``);
- ``max_unpool3d`` scatters each value to its flat index into ``OD * OH * OW``, through
  ``_pooling``'s shared unpooling (``dx = g.flatten(2)[indices]``).
"""

from __future__ import annotations

import math
import numbers

from .._tensor import Tensor
from ._conv import _ints
from ._pooling import _max_unpool, avg_pool3d, max_pool3d

__all__ = ["lp_pool3d", "max_unpool3d"]


def lp_pool3d(
    input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False
) -> Tensor:
    """Power-average pooling over (D, H, W): ``y = (sum over the window of x^p)^(1/p)``.

    ``input`` (N, C, D, H, W) or (C, D, H, W) -> (N, C, OD, OH, OW), windows as
    :func:`avg_pool3d` with no padding. Computed as torch does,
    ``(sign(a) * relu(|a|) * k)^(1/p)`` with ``a = avg_pool3d(x^p)`` and ``k = kd * kh * kw``.

    Gradient (through the composite): ``dx = g * x^(p-1) * y^(1-p)`` per window element.
    """
    if not isinstance(norm_type, numbers.Real) or isinstance(norm_type, bool) or norm_type == 0:
        raise ValueError(f"lp_pool3d: norm_type must be a non-zero number, got {norm_type!r}")
    kernel = _ints(kernel_size, 3, "kernel_size", "lp_pool3d")
    if norm_type == math.inf:
        return max_pool3d(input.abs(), kernel, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -max_pool3d(-input.abs(), kernel, stride, 0, 1, ceil_mode)
    out = avg_pool3d(input.pow(norm_type), kernel, stride, 0, ceil_mode)
    volume = kernel[0] * kernel[1] * kernel[2]
    return (out.sign() * out.abs().relu()).mul(volume).pow(1.0 / norm_type)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Partial inverse of :func:`max_pool3d`: zeros of ``(N, C, OD, OH, OW)`` with each input
    value put at its flat ``indices`` entry; ``OD = (D - 1) * stride - 2 * padding + kernel``
    (likewise OH, OW) unless ``output_size`` says otherwise.

    Gradient: ``dx = g.flatten(2)[indices]``.
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3, "max_unpool3d")
