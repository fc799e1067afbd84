"""torch's module path ``torch.nn.modules.upsampling``: Upsample, UpsamplingNearest2d, UpsamplingBilinear2d (defined in ``spatial.py``)."""

from __future__ import annotations

from .spatial import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]
