"""``tinyattn.multiprocessing``: the standard library's :mod:`multiprocessing`, re-exported.

torch's module wraps the stdlib one so that tensors are sent between processes through
shared memory. tinyattn tensors are NumPy arrays and pickle by value, so the plain stdlib
module is all a CPU program needs (``set_start_method``, ``Process``, ``Queue``, ``Pool``...).
"""

from __future__ import annotations

import multiprocessing as _mp
from multiprocessing import *  # noqa: F403

__all__ = [
    *_mp.__all__,
    "get_all_sharing_strategies",
    "get_sharing_strategy",
    "set_sharing_strategy",
]


def get_all_sharing_strategies() -> set[str]:
    """``{"file_system"}``: tinyattn tensors are sent by value, there is no shared-memory strategy."""
    return {"file_system"}


def get_sharing_strategy() -> str:
    """``"file_system"`` (see :func:`get_all_sharing_strategies`)."""
    return "file_system"


def set_sharing_strategy(new_strategy: str) -> None:
    """Accepts only a name from :func:`get_all_sharing_strategies` (it changes nothing)."""
    if new_strategy not in get_all_sharing_strategies():
        raise ValueError(
            f"set_sharing_strategy(): argument 'new_strategy' must be one of "
            f"{sorted(get_all_sharing_strategies())}, got {new_strategy!r}"
        )
