"""``tinyattn.backends.cuda``: CUDA switches, settable and without effect (no GPU backend).

``matmul.allow_tf32`` and the reduced-precision flags record what a script asked for;
tinyattn's products are NumPy's, in the operands' dtype, whatever they say.

The scaled-dot-product-attention switches are read, as by torch's CPU SDPA: the
*flash* switch allows the fused numba kernels, the *math* switch the stored-weights
NumPy path (``softmax(Q K^T * scale + mask) V`` with the weights kept). The other
switches (memory-efficient, cuDNN, overrideable) name CUDA kernels and are recorded
only. ``sdp_path`` applies them; ``nn.attention.sdpa_kernel`` (and the deprecated
``sdp_kernel`` here) set them for a block::

    >>> import tinyattn as torch
    >>> from tinyattn.nn.attention import sdpa_kernel, SDPBackend
    >>> with sdpa_kernel(SDPBackend.MATH):            # the math path only
    ...     torch.backends.cuda.flash_sdp_enabled()
    False
"""

from __future__ import annotations

import contextlib
import enum
import warnings
from collections.abc import Iterator

__all__ = [
    "is_built",
    "matmul",
    "SDPBackend",
    "sdp_kernel",
    "enable_flash_sdp",
    "enable_mem_efficient_sdp",
    "enable_math_sdp",
    "enable_cudnn_sdp",
    "flash_sdp_enabled",
    "mem_efficient_sdp_enabled",
    "math_sdp_enabled",
    "cudnn_sdp_enabled",
]


def is_built() -> bool:
    """False: tinyattn has no CUDA build."""
    return False


class _MatmulFlags:
    """``tinyattn.backends.cuda.matmul``: torch's flags, stored and ignored."""

    __slots__ = (
        "allow_tf32",
        "allow_fp16_reduced_precision_reduction",
        "allow_bf16_reduced_precision_reduction",
    )

    def __init__(self) -> None:
        # torch's defaults
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True

    def __setattr__(self, name: str, value) -> None:
        if name not in self.__slots__:
            raise AttributeError(f"Unknown attribute {name}")
        object.__setattr__(self, name, value)


matmul = _MatmulFlags()
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


def sdp_kernel(
    enable_flash: bool = True,
    enable_math: bool = True,
    enable_mem_efficient: bool = True,
    enable_cudnn: bool = True,
):
    """Deprecated (as in torch): ``nn.attention.sdpa_kernel`` with the backends whose flag is True.

    Warns ``FutureWarning`` when called; the switches are restored when the block ends.
    """
    warnings.warn(
        "`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context manager "
        "will be removed. Please see `torch.nn.attention.sdpa_kernel()` for the new context "
        "manager, with updated signature.",
        FutureWarning,
        stacklevel=2,
    )
    chosen = [
        backend
        for backend, flag in (
            (SDPBackend.FLASH_ATTENTION, enable_flash),
            (SDPBackend.EFFICIENT_ATTENTION, enable_mem_efficient),
            (SDPBackend.MATH, enable_math),
            (SDPBackend.CUDNN_ATTENTION, enable_cudnn),
        )
        if flag
    ]
    return sdp_backends_enabled(chosen)


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


def enable_flash_sdp(enabled: bool) -> None:
    """Allow (or not) SDPA's fused numba kernels (torch: its flash kernel)."""
    _sdp["flash"] = bool(enabled)


def enable_mem_efficient_sdp(enabled: bool) -> None:
    """Recorded, no effect."""
    _sdp["mem_efficient"] = bool(enabled)


def enable_math_sdp(enabled: bool) -> None:
    """Allow (or not) SDPA's stored-weights math path."""
    _sdp["math"] = bool(enabled)


def enable_cudnn_sdp(enabled: bool) -> None:
    """Recorded, no effect (no cuDNN)."""
    _sdp["cudnn"] = bool(enabled)


def flash_sdp_enabled() -> bool:
    return _sdp["flash"]


def mem_efficient_sdp_enabled() -> bool:
    return _sdp["mem_efficient"]


def math_sdp_enabled() -> bool:
    return _sdp["math"]


def cudnn_sdp_enabled() -> bool:
    return _sdp["cudnn"]
