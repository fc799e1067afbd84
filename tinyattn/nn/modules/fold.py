"""torch's module path ``torch.nn.modules.fold``: Fold, Unfold (defined in ``spatial.py``)."""

from __future__ import annotations

from .spatial import Fold, Unfold

__all__ = ["Fold", "Unfold"]
