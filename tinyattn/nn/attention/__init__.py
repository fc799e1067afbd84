"""``tinyattn.nn.attention``: torch's attention helpers.

* :mod:`tinyattn.nn.attention.flex_attention`: ``flex_attention`` with ``score_mod`` /
  ``create_block_mask`` (attention variants written as small Python functions).
* ``SDPBackend`` and ``sdpa_kernel``: torch's way to choose among its SDPA kernels.
  tinyattn has one CPU rule (``nn.functional.scaled_dot_product_attention`` says
  which path runs), so ``sdpa_kernel`` checks its argument, records the choice in
  ``tinyattn.backends.cuda``'s switches for the duration of the block (as torch
  does) and otherwise changes nothing.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterable, Iterator

__all__ = ["SDPBackend", "sdpa_kernel", "flex_attention"]


class SDPBackend(enum.Enum):
    """torch's names for its scaled-dot-product-attention kernels (same values)."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_SWITCHES = {
    SDPBackend.MATH: "math",
    SDPBackend.FLASH_ATTENTION: "flash",
    SDPBackend.EFFICIENT_ATTENTION: "mem_efficient",
}


@contextlib.contextmanager
def sdpa_kernel(
    backends: SDPBackend | Iterable[SDPBackend], set_priority: bool = False
) -> Iterator[None]:
    """Within the block, only ``backends`` are enabled in ``tinyattn.backends.cuda``'s
    switches (restored afterwards). tinyattn's SDPA does not read them: its CPU path
    is the same whatever is enabled.

    backends : one ``SDPBackend`` or a list of them.
    set_priority : accepted for torch's signature (the order is not used).
    """
    chosen = [backends] if isinstance(backends, SDPBackend) else list(backends)
    for backend in chosen:
        if not isinstance(backend, SDPBackend):
            raise TypeError(
                "sdpa_kernel(): argument 'backends' must be an SDPBackend or a list of them, "
                f"got an element of type {type(backend).__name__}"
            )
    from ...backends import cuda  # the switches live where torch keeps them

    saved = dict(cuda._sdp)
    for backend, switch in _SWITCHES.items():
        cuda._sdp[switch] = backend in chosen
    try:
        yield
    finally:
        cuda._sdp.update(saved)


def __getattr__(name: str):
    if name == "flex_attention":  # the submodule, imported on first use (as torch's)
        import importlib

        return importlib.import_module(f"{__name__}.flex_attention")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
