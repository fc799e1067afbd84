"""torch's module path ``torch.nn.modules.pixelshuffle``: PixelShuffle, PixelUnshuffle (defined in ``padding.py``)."""

from __future__ import annotations

from .padding import PixelShuffle, PixelUnshuffle

__all__ = ["PixelShuffle", "PixelUnshuffle"]
