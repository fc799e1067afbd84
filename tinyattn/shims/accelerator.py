"""``tinyattn.accelerator``: there is no accelerator; answers as torch's CPU-only build does.

>>> import tinyattn as torch
>>> torch.accelerator.is_available(), torch.accelerator.current_accelerator()
(False, None)
"""

from __future__ import annotations

__all__ = ["current_accelerator", "device_count", "is_available"]


def is_available() -> bool:
    """False: tinyattn runs on the CPU only."""
    return False


def current_accelerator(check_available: bool = False) -> None:
    """None: there is no accelerator (torch's CPU-only build returns None too)."""
    return None


def device_count() -> int:
    """0: there is no accelerator."""
    return 0
