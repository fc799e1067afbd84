"""``Unfold``, ``Fold``, ``Upsample`` (and ``UpsamplingNearest2d`` / ``UpsamplingBilinear2d``):
module forms of the spatial functions."""

from __future__ import annotations

from ...tensor_api.tensor import Tensor
from ..functional import sampling_spatial as _spatial
from ..functional import sampling_upsample as _upsample
from .module import Module


class Unfold(Module):
    """Sliding blocks as columns (im2col): ``(N, C, H, W) -> (N, C * kh * kw, L)``."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input: Tensor) -> Tensor:
        """im2col: (N, C, H, W) -> (N, C * kh * kw, L) blocks as columns. ``d input = fold(g)``."""
        return _spatial.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
            f"padding={self.padding}, stride={self.stride}"
        )


class Fold(Module):
    """Columns summed back into an image (col2im): ``(N, C * kh * kw, L) -> (N, C, H, W)``."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:
        """col2im: (N, C * kh * kw, L) -> (N, C, *output_size), overlaps summed.

        ``d input = unfold(g)``.
        """
        return _spatial.fold(
            input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride
        )

    def extra_repr(self) -> str:
        return (
            f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
            f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}"
        )


class Upsample(Module):
    """:func:`~tinyattn.nn.functional.interpolate` with fixed ``size`` or ``scale_factor``."""

    def __init__(
        self,
        size=None,
        scale_factor=None,
        mode: str = "nearest",
        align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
    ) -> None:
        super().__init__()
        if isinstance(scale_factor, (tuple, list)):  # stored as floats, as torch
            scale_factor = tuple(float(f) for f in scale_factor)
        elif scale_factor:
            scale_factor = float(scale_factor)
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners, self.recompute_scale_factor = align_corners, recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        """Resize (N, C, *spatial) to ``size`` or by ``scale_factor`` with ``mode``.

        ``d input[j] = sum_i w_ij g[i]`` over the outputs i that read input j with weight ``w_ij``
        (nearest: 1 for the source element; linear modes: the interpolation weights).
        """
        return _upsample.interpolate(
            input,
            self.size,
            self.scale_factor,
            self.mode,
            self.align_corners,
            recompute_scale_factor=self.recompute_scale_factor,
        )

    def extra_repr(self) -> str:
        what = f"size={self.size}" if self.size is not None else f"scale_factor={self.scale_factor}"
        return f"{what}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour upsampling of (N, C, H, W): ``Upsample(mode='nearest')``."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear upsampling of (N, C, H, W) with ``align_corners=True`` (as torch)."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
