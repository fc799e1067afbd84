"""``tinyattn.autograd.grad_mode`` (as torch's): grad mode lives in the core
(``tinyattn/core/grad_mode.py``)."""

from __future__ import annotations

from ..core.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)

__all__ = ["enable_grad", "inference_mode", "is_grad_enabled", "no_grad", "set_grad_enabled"]
