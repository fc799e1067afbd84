"""The shape ops, now split by concept: ``views.py`` (results that share memory) and
``rearrange.py`` (results that copy). This module re-exports both so that
``ops.shape.<name>`` keeps working for callers not yet updated (``nn/_mha.py``).
"""

from .rearrange import *  # noqa: F403
from .rearrange import __all__ as _rearrange_all
from .views import *  # noqa: F403
from .views import __all__ as _views_all

__all__ = _views_all + _rearrange_all
