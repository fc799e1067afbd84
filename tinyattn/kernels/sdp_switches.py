"""Which attention path ``scaled_dot_product_attention`` may take: torch's SDPA switches.

The *flash* switch allows the fused numba kernels, the *math* switch the stored-weights
NumPy path (``softmax(Q K^T * scale + mask) V`` with the weights kept). The other switches
(memory-efficient, cuDNN, overrideable) name CUDA kernels and are recorded only.
:func:`sdp_path` applies them. ``tinyattn.backends.cuda`` (torch's switches) and
``nn.attention.sdpa_kernel`` set them through :func:`set_switch` and
:func:`sdp_backends_enabled`.
"""

from __future__ import annotations

import contextlib
import enum
import warnings
from collections.abc import Iterator

__all__ = [
    "SDPBackend",
    "SWITCHES",
    "sdp_path",
    "set_sdp_backends",
    "enabled_sdp_backends",
    "sdp_backends_enabled",
    "set_switch",
    "switch",
]

_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True, "overrideable": True}


class SDPBackend(enum.Enum):
    """torch's names for its scaled-dot-product-attention kernels (same values)."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


# the switch of each backend, and the order in which enabled backends are tried (torch's default)
SWITCHES = {
    SDPBackend.FLASH_ATTENTION: "flash",
    SDPBackend.EFFICIENT_ATTENTION: "mem_efficient",
    SDPBackend.MATH: "math",
    SDPBackend.CUDNN_ATTENTION: "cudnn",
    SDPBackend.OVERRIDEABLE: "overrideable",
}
_DEFAULT_PRIORITY = (
    SDPBackend.FLASH_ATTENTION,
    SDPBackend.EFFICIENT_ATTENTION,
    SDPBackend.MATH,
    SDPBackend.CUDNN_ATTENTION,
    SDPBackend.OVERRIDEABLE,
)
_priority = list(_DEFAULT_PRIORITY)

_FLASH_RULE = (
    "tinyattn's fused kernels need query, key and value all 3-D or all 4-D with equal batch "
    "(and, up to GQA, head) sizes, a mask that broadcasts only over those, and no mask gradient"
)


def sdp_path(fused_layout):
    """The path scaled_dot_product_attention takes under the switches: ``fused_layout``
    (the fused kernels; given when the inputs fit them) or None (the stored-weights math
    path), in the priority order among the enabled ones. Raises torch's errors when no
    enabled backend can run (warning first why the flash kernel could not)."""
    flash, math = _sdp["flash"], _sdp["math"]
    if flash and fused_layout is not None:
        if not math or _priority.index(SDPBackend.FLASH_ATTENTION) < _priority.index(
            SDPBackend.MATH
        ):
            return fused_layout
    if math:
        return None
    if not flash:
        raise RuntimeError(
            "No viable backend for scaled_dot_product_attention was found. This is likely due "
            "to turning off both the math kernel and the fused kernels."
        )
    warnings.warn(
        f"Flash attention kernel not used because: {_FLASH_RULE}", stacklevel=5
    )  # (the caller of SDPA)
    raise RuntimeError("No available kernel.  Aborting execution.")


def set_sdp_backends(enabled, priority=None) -> None:
    """Enable exactly the backends in ``enabled``; ``priority``: the order to try them in."""
    for backend, switch in SWITCHES.items():
        _sdp[switch] = backend in enabled
    if priority is not None:
        _priority[:] = list(dict.fromkeys([*priority, *_DEFAULT_PRIORITY]))


def enabled_sdp_backends() -> list:
    """The enabled backends, in priority order."""
    return [b for b in _priority if _sdp[SWITCHES[b]]]


@contextlib.contextmanager
def sdp_backends_enabled(backends, set_priority: bool = False) -> Iterator[dict]:
    """Only ``backends`` enabled (and, with ``set_priority``, tried in their order) in the block."""
    saved, saved_priority = dict(_sdp), list(_priority)
    set_sdp_backends(backends, backends if set_priority else None)
    try:
        yield {}
    finally:
        _sdp.update(saved)
        _priority[:] = saved_priority


def set_switch(name: str, enabled: bool) -> None:
    """Turn the switch ``name`` ("flash", "mem_efficient", "math", "cudnn") on or off."""
    if name not in _sdp:
        raise ValueError(f"set_switch(): name must be one of {sorted(_sdp)}, got {name!r}")
    _sdp[name] = bool(enabled)


def switch(name: str) -> bool:
    """Whether the switch ``name`` is on."""
    return _sdp[name]
