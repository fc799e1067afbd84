"""``tinyattn.cuda.amp``: torch's deprecated CUDA spellings of ``autocast`` and ``GradScaler``.

As in torch without a GPU: both warn that the spelling is deprecated, then that CUDA is
not available, and disable themselves (see :mod:`tinyattn.amp`).
"""

from __future__ import annotations

import warnings

from ...core import _dtype as dt
from .. import amp as _amp

__all__ = ["GradScaler", "autocast"]


class autocast(_amp.autocast):
    """``tinyattn.amp.autocast("cuda", ...)``: warns and runs in full precision."""

    _stacklevel = 3

    def __init__(
        self,
        enabled: bool = True,
        dtype: dt.dtype = dt.float16,
        cache_enabled: bool = True,
    ) -> None:
        warnings.warn(
            "`tinyattn.cuda.amp.autocast(args...)` is deprecated. "
            "Please use `tinyattn.amp.autocast('cuda', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_amp.GradScaler):
    """``tinyattn.amp.GradScaler("cuda", ...)``: warns and disables itself."""

    _stacklevel = 3

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        warnings.warn(
            "`tinyattn.cuda.amp.GradScaler(args...)` is deprecated. "
            "Please use `tinyattn.amp.GradScaler('cuda', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__(
            "cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled
        )
