"""Padding layers (``ZeroPad``, ``ConstantPad``, ``ReflectionPad``, ``ReplicationPad``,
``CircularPad``) and pixel rearrangements (``PixelShuffle``, ``PixelUnshuffle``,
``ChannelShuffle``): module forms of ``F.pad`` and :mod:`tinyattn.nn.functional.pixel`."""

from __future__ import annotations

import numbers

from ...tensor_api.tensor import Tensor
from ..functional import pixel as _pixel
from ..functional.sampling_spatial import pad
from .module import Module

__all__ = [
    "ZeroPad1d",
    "ZeroPad2d",
    "ZeroPad3d",
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReflectionPad3d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ReplicationPad3d",
    "CircularPad1d",
    "CircularPad2d",
    "CircularPad3d",
    "PixelShuffle",
    "PixelUnshuffle",
    "ChannelShuffle",
]


class _PadNd(Module):
    """Pads the last ``_n`` dims; ``padding`` an int (every side) or ``2 * _n`` ints
    ``(last_lo, last_hi, second_last_lo, ...)`` as ``F.pad``. ``d input = g`` at the source
    positions (summed where a mode copies an element more than once)."""

    _n = 1
    _mode = "constant"

    def __init__(self, padding) -> None:
        super().__init__()
        name, n = type(self).__name__, 2 * self._n
        if isinstance(padding, numbers.Integral) and not isinstance(padding, bool):
            padding = (int(padding),) * n
        elif not (
            isinstance(padding, (tuple, list))
            and len(padding) == n
            and all(isinstance(p, numbers.Integral) for p in padding)
        ):
            raise ValueError(f"{name}: padding must be an int or {n} ints, got {padding!r}")
        self.padding = tuple(int(p) for p in padding)

    def forward(self, input: Tensor) -> Tensor:
        """Pad (*, d1, ..., d_n) by ``padding``; gradient: ``g`` summed back to its sources."""
        if self._mode == "constant":
            return pad(input, self.padding, "constant", self.value)
        return pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with ``value``."""


class ConstantPad2d(_ConstantPadNd):
    """Pad the last two dims with ``value``."""

    _n = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last three dims with ``value``."""

    _n = 3


class ZeroPad1d(ConstantPad1d):
    """Pad the last dim with zeros."""

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pad the last two dims with zeros."""

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    """Pad the last three dims with zeros."""

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ReflectionPadNd(_PadNd):
    """Base of the reflection-padding layers (torch's class of that name)."""

    _mode = "reflect"


class _ReplicationPadNd(_PadNd):
    """Base of the replication-padding layers (torch's class of that name)."""

    _mode = "replicate"


class ReflectionPad1d(_ReflectionPadNd):
    """Mirror the last dim about its edge elements (padding < size)."""

    _mode = "reflect"


class ReflectionPad2d(_ReflectionPadNd):
    """Mirror the last two dims about their edge elements."""

    _n, _mode = 2, "reflect"


class ReflectionPad3d(_ReflectionPadNd):
    """Mirror the last three dims about their edge elements."""

    _n, _mode = 3, "reflect"


class ReplicationPad1d(_ReplicationPadNd):
    """Repeat the edge element of the last dim."""

    _mode = "replicate"


class ReplicationPad2d(_ReplicationPadNd):
    """Repeat the edge elements of the last two dims."""

    _n, _mode = 2, "replicate"


class ReplicationPad3d(_ReplicationPadNd):
    """Repeat the edge elements of the last three dims."""

    _n, _mode = 3, "replicate"


class _CircularPadNd(_PadNd):
    """Circular padding: ``forward`` checks the input's rank with ``_check_input_dim``."""

    _mode = "circular"

    def forward(self, input: Tensor) -> Tensor:
        """Pad (*, d1, ..., d_n) circularly; gradient: ``g`` summed back to its sources."""
        self._check_input_dim(input)
        return pad(input, self.padding, "circular")

    def _check_input_dim(self, input: Tensor) -> None:
        """Unbatched ``(C, *spatial)`` or batched ``(N, C, *spatial)``, as torch."""
        if input.dim() not in (self._n + 1, self._n + 2):
            raise ValueError(
                f"expected {self._n + 1}D or {self._n + 2}D input (got {input.dim()}D input)"
            )


class CircularPad1d(_CircularPadNd):
    """Wrap the last dim around (padding <= size)."""


class CircularPad2d(_CircularPadNd):
    """Wrap the last two dims around."""

    _n = 2


class CircularPad3d(_CircularPadNd):
    """Wrap the last three dims around."""

    _n = 3


class PixelShuffle(Module):
    """(*, C r^2, H, W) -> (*, C, H r, W r)."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        """Sub-pixel rearrangement; ``d input = pixel_unshuffle(g, r)``."""
        return _pixel.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H r, W r) -> (*, C r^2, H, W)."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        """Inverse sub-pixel rearrangement; ``d input = pixel_shuffle(g, r)``."""
        return _pixel.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """(N, C, *) with channels interleaved across ``groups``."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        """Channel shuffle; ``d input = channel_shuffle(g, C / groups)``."""
        return _pixel.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
