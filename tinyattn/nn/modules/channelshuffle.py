"""torch's module path ``torch.nn.modules.channelshuffle``: ChannelShuffle (defined in ``padding.py``)."""

from __future__ import annotations

from .padding import ChannelShuffle

__all__ = ["ChannelShuffle"]
