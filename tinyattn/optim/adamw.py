"""torch's module path ``torch.optim.adamw``: ``AdamW`` (defined with ``Adam`` in ``adam.py``)."""

from __future__ import annotations

from .adam import AdamW

__all__ = ["AdamW"]
