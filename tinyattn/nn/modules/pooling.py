"""Pooling layers: module forms of :mod:`tinyattn.nn.functional.pool` with torch's arguments and reprs."""

from __future__ import annotations

from ...tensor_api.tensor import Tensor
from ..functional import pool as P
from ..functional.pool_fractional import fractional_max_pool2d, fractional_max_pool3d
from ..functional.pool_lp_unpool import lp_pool3d, max_unpool3d
from .module import Module

__all__ = [
    "MaxPool1d",
    "MaxPool2d",
    "MaxPool3d",
    "AvgPool1d",
    "AvgPool2d",
    "AvgPool3d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d",
    "LPPool1d",
    "LPPool2d",
    "MaxUnpool1d",
    "MaxUnpool2d",
    "MaxUnpool3d",
    "LPPool3d",
    "FractionalMaxPool2d",
    "FractionalMaxPool3d",
]


def _tuple(value, n: int) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


class _MaxPoolNd(Module):
    """Max over each window; ``stride`` defaults to ``kernel_size``."""

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        dilation=1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class MaxPool1d(_MaxPoolNd):
    """Max pooling over (N, C, L) or (C, L): see :func:`~tinyattn.nn.functional.max_pool1d`."""

    def forward(self, input: Tensor):
        """(N, C, L) -> (N, C, L_out). ``dx[i] = sum of g[o] over windows o whose max is i``."""
        return P.max_pool1d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            ceil_mode=self.ceil_mode,
            return_indices=self.return_indices,
        )


class MaxPool2d(_MaxPoolNd):
    """Max pooling over (N, C, H, W) or (C, H, W): see
    :func:`~tinyattn.nn.functional.max_pool2d`."""

    def forward(self, input: Tensor):
        """(N, C, H, W) -> (N, C, OH, OW). ``dx[i] = sum of g[o] over windows o whose max is i``."""
        return P.max_pool2d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            ceil_mode=self.ceil_mode,
            return_indices=self.return_indices,
        )


class MaxPool3d(_MaxPoolNd):
    """Max pooling over (N, C, D, H, W) or (C, D, H, W): see
    :func:`~tinyattn.nn.functional.max_pool3d`."""

    def forward(self, input: Tensor):
        """(N, C, D, H, W) -> (N, C, OD, OH, OW). ``dx[i] = sum of g[o] over windows o whose
        max is i``."""
        return P.max_pool3d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            ceil_mode=self.ceil_mode,
            return_indices=self.return_indices,
        )


class _AvgPoolNd(Module):
    """Base of the average-pooling layers (torch's class of that name, for ``isinstance``)."""


class _LPPoolNd(Module):
    """Base of the power-average pooling layers (torch's class of that name)."""


class _MaxUnpoolNd(Module):
    """Base of the max-unpooling layers (torch's class of that name)."""


class AvgPool1d(_AvgPoolNd):
    """Average pooling over (N, C, L) or (C, L); sizes kept as 1-tuples, as in torch."""

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
    ) -> None:
        super().__init__()
        self.kernel_size = _tuple(kernel_size, 1)
        self.stride = _tuple(stride if stride is not None else kernel_size, 1)
        self.padding = _tuple(padding, 1)
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        """(N, C, L) -> (N, C, L_out). ``dx[i] = sum over windows w holding i of g[w] / div[w]``."""
        return P.avg_pool1d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
        )

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """Average pooling over (N, C, H, W) or (C, H, W): see
    :func:`~tinyattn.nn.functional.avg_pool2d`."""

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input: Tensor) -> Tensor:
        """(N, C, H, W) -> (N, C, OH, OW). ``dx[i] = sum over windows w holding i of g[w] / div[w]``."""
        return P.avg_pool2d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool3d(AvgPool2d):
    """Average pooling over (N, C, D, H, W) or (C, D, H, W): see
    :func:`~tinyattn.nn.functional.avg_pool3d`."""

    def forward(self, input: Tensor) -> Tensor:
        """(N, C, D, H, W) -> (N, C, OD, OH, OW). ``dx[i] = sum over windows w holding i of
        g[w] / div[w]``."""
        return P.avg_pool3d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )


class _AdaptivePool(Module):
    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class _AdaptiveAvgPoolNd(_AdaptivePool):
    """Base of the adaptive average-pooling layers (torch's class of that name)."""


class _AdaptiveMaxPoolNd(_AdaptivePool):
    """Base of the adaptive max-pooling layers (torch's class of that name)."""


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Mean over ``output_size`` windows tiling L."""

    def forward(self, input: Tensor) -> Tensor:
        """(N, C, L) -> (N, C, output_size). ``dx[i] = sum over windows w holding i of g[w] / |w|``."""
        return P.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Mean over windows tiling (H, W) into ``output_size`` (``None`` keeps a dim)."""

    def forward(self, input: Tensor) -> Tensor:
        """(N, C, H, W) -> (N, C, *output_size). ``dx[i] = sum over windows w holding i of g[w] / |w|``."""
        return P.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Mean over windows tiling (D, H, W) into ``output_size`` (``None`` keeps a dim)."""

    def forward(self, input: Tensor) -> Tensor:
        """(N, C, D, H, W) -> (N, C, *output_size). ``dx[i] = sum over windows w holding i of
        g[w] / |w|``."""
        return P.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max over ``output_size`` windows tiling L."""

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input: Tensor):
        """(N, C, L) -> (N, C, output_size). ``dx[i] = sum of g[o] over windows whose max is i``."""
        return P.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(AdaptiveMaxPool1d):
    """Max over windows tiling (H, W) into ``output_size``."""

    def forward(self, input: Tensor):
        """(N, C, H, W) -> (N, C, *output_size). ``dx[i] = sum of g[o] over windows whose max is i``."""
        return P.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool3d(AdaptiveMaxPool1d):
    """Max over windows tiling (D, H, W) into ``output_size``."""

    def forward(self, input: Tensor):
        """(N, C, D, H, W) -> (N, C, *output_size). ``dx[i] = sum of g[o] over windows whose
        max is i``."""
        return P.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class LPPool1d(_LPPoolNd):
    """Power-average pooling ``(sum over the window of x^p)^(1/p)`` along L."""

    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        """(N, C, L) -> (N, C, L_out). ``dx = g * x^(p-1) * y^(1-p)`` per window element."""
        return P.lp_pool1d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (
            f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}, ceil_mode={self.ceil_mode}"
        )


class LPPool2d(LPPool1d):
    """Power-average pooling ``(sum over the window of x^p)^(1/p)`` over (H, W)."""

    def forward(self, input: Tensor) -> Tensor:
        """(N, C, H, W) -> (N, C, OH, OW). ``dx = g * x^(p-1) * y^(1-p)`` per window element."""
        return P.lp_pool2d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class MaxUnpool1d(_MaxUnpoolNd):
    """Partial inverse of ``MaxPool1d``: each value put back at its index, zeros elsewhere."""

    _n = 1

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        n = self._n
        self.kernel_size = _tuple(kernel_size, n)
        self.stride = _tuple(stride if stride is not None else kernel_size, n)
        self.padding = _tuple(padding, n)

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:
        """(N, C, L) values and indices -> (N, C, L_out). ``dx = g[indices]``."""
        return P.max_unpool1d(
            input, indices, self.kernel_size, self.stride, self.padding, output_size
        )

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool2d(MaxUnpool1d):
    """Partial inverse of ``MaxPool2d``: each value put back at its flat index into OH * OW."""

    _n = 2

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:
        """(N, C, H, W) values and indices -> (N, C, OH, OW). ``dx = g.flatten(2)[indices]``."""
        return P.max_unpool2d(
            input, indices, self.kernel_size, self.stride, self.padding, output_size
        )


class LPPool3d(LPPool1d):
    """Power-average pooling ``(sum over the window of x^p)^(1/p)`` over (D, H, W)."""

    def forward(self, input: Tensor) -> Tensor:
        """(N, C, D, H, W) -> (N, C, OD, OH, OW). ``dx = g * x^(p-1) * y^(1-p)`` per window element."""
        return lp_pool3d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class MaxUnpool3d(MaxUnpool1d):
    """Partial inverse of ``MaxPool3d``: each value put back at its flat index into OD * OH * OW."""

    _n = 3

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:
        """(N, C, D, H, W) values and indices -> (N, C, OD, OH, OW). ``dx = g.flatten(2)[indices]``."""
        return max_unpool3d(
            input, indices, self.kernel_size, self.stride, self.padding, output_size
        )


class _FractionalMaxPoolNd(Module):
    """Max over windows at pseudo-random steps; exactly one of ``output_size`` / ``output_ratio``.

    ``_random_samples`` (N, C, dims), when given, is a buffer (so it is in the state dict)
    and fixes the windows; otherwise each call draws new ones.
    """

    _n = 2

    def __init__(
        self,
        kernel_size,
        output_size=None,
        output_ratio=None,
        return_indices: bool = False,
        _random_samples=None,
    ) -> None:
        super().__init__()
        n, name = self._n, type(self).__name__
        if n == 3 and any(k <= 0 for k in _tuple(kernel_size, n)):
            raise ValueError(f"kernel_size must be greater than 0, but got {kernel_size}")
        self.kernel_size = _tuple(kernel_size, n)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _tuple(output_size, n) if output_size is not None else None
        self.output_ratio = _tuple(output_ratio, n) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(
                f"{name} requires specifying either an output size, or a pooling ratio"
            )
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input: Tensor):
        """Pooled output (and indices if ``return_indices``); ``dx = scatter-add of g at indices``."""
        pool = fractional_max_pool2d if self._n == 2 else fractional_max_pool3d
        return pool(
            input,
            self.kernel_size,
            self.output_size,
            self.output_ratio,
            self.return_indices,
            _random_samples=self._random_samples,
        )


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Fractional max pooling over (N, C, H, W) or (C, H, W): see
    :func:`~tinyattn.nn.functional.fractional_max_pool2d`."""

    _n = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Fractional max pooling over (N, C, T, H, W) or (C, T, H, W): see
    :func:`~tinyattn.nn.functional.fractional_max_pool3d`."""

    _n = 3
