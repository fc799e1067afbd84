"""The nn breadth additions, gathered for one import at the end of ``functional.py``:
activations, distances, channel/alpha dropout and the further losses."""

from ._activations import *  # noqa: F403
from ._activations import __all__ as _a
from ._ctc import *  # noqa: F403
from ._ctc import __all__ as _c
from ._distance import *  # noqa: F403
from ._distance import __all__ as _d
from ._dropout_more import *  # noqa: F403
from ._dropout_more import __all__ as _r
from ._losses_margin import *  # noqa: F403
from ._losses_margin import __all__ as _m
from ._losses_more import *  # noqa: F403
from ._losses_more import __all__ as _l

__all__ = [*_a, *_d, *_r, *_l, *_m, *_c]
