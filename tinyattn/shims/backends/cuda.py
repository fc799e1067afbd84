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

import warnings

from ...kernels.sdp_switches import (
    SDPBackend,
    sdp_backends_enabled,
    set_switch,
    switch,
)

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


def enable_flash_sdp(enabled: bool) -> None:
    """Allow (or not) SDPA's fused numba kernels (torch: its flash kernel)."""
    set_switch("flash", enabled)


def enable_mem_efficient_sdp(enabled: bool) -> None:
    """Recorded, no effect."""
    set_switch("mem_efficient", enabled)


def enable_math_sdp(enabled: bool) -> None:
    """Allow (or not) SDPA's stored-weights math path."""
    set_switch("math", enabled)


def enable_cudnn_sdp(enabled: bool) -> None:
    """Recorded, no effect (no cuDNN)."""
    set_switch("cudnn", enabled)


def flash_sdp_enabled() -> bool:
    return switch("flash")


def mem_efficient_sdp_enabled() -> bool:
    return switch("mem_efficient")


def math_sdp_enabled() -> bool:
    return switch("math")


def cudnn_sdp_enabled() -> bool:
    return switch("cudnn")
